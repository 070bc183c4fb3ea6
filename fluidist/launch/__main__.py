"""``python -m fluidist.launch``: the launcher's command line."""
from .cli import main

if __name__ == "__main__":
    main()
