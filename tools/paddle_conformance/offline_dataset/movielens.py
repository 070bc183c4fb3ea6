"""Stand-in for ``paddle.dataset.movielens``: synthetic users, movies and ratings, not MovieLens-1M.

Paddle's id ranges: users 1..6040 (gender, an age of ``age_table``, job 0..20), movies 1..3952
(1..3 of the 18 MovieLens genres, a title of 1..6 made-up words from a 5174-word title dictionary).
5000 ratings of 1..5 stars, each from a user's and a movie's fixed leaning, the user's job's taste
for the movie's first genre and a little noise, so a model of the user and movie features learns
them; Paddle yields ``stars * 2 - 5``. The split is Paddle's: a record goes to the test set when a
uniform draw of ``RandomState(rand_seed)`` is below ``test_ratio`` (Paddle: about 1 million ratings).

A sample is Paddle's list ``[user_id, gender (0 male, 1 female), age index, job_id, movie_id,
[category ids], [title word ids], [rating]]``, ints but for the float rating.
"""
import functools
from typing import Callable, Dict, Iterator, List, Optional

import numpy as np

from . import _synthetic

__all__ = [
    'train', 'test', 'get_movie_title_dict', 'max_movie_id', 'max_user_id', 'age_table',
    'movie_categories', 'max_job_id', 'user_info', 'movie_info'
]

age_table = [1, 18, 25, 35, 45, 50, 56]

URL = 'https://dataset.bj.bcebos.com/movielens%2Fml-1m.zip'
MD5 = 'c4d9eecfca2ab87c1945afe126590906'

USERS = 6040
MOVIES = 3952
JOBS = 21
TITLE_WORDS = 5174
RATINGS = 5000
GENRES = ["Action", "Adventure", "Animation", "Children's", "Comedy", "Crime", "Documentary", "Drama",
          "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance", "Sci-Fi", "Thriller", "War",
          "Western"]


class MovieInfo(object):
    """A movie's id, categories (genre names) and title."""

    def __init__(self, index: object, categories: List[str], title: str) -> None:
        self.index = int(index)  # type: ignore[call-overload]
        self.categories = categories
        self.title = title

    def value(self) -> list:
        """``[movie id, [category ids], [title word ids]]``."""
        assert CATEGORIES_DICT is not None and MOVIE_TITLE_DICT is not None
        return [
            self.index, [CATEGORIES_DICT[c] for c in self.categories],
            [MOVIE_TITLE_DICT[w.lower()] for w in self.title.split()]
        ]

    def __str__(self) -> str:
        return "<MovieInfo id(%d), title(%s), categories(%s)>" % (self.index, self.title, self.categories)

    def __repr__(self) -> str:
        return self.__str__()


class UserInfo(object):
    """A user's id, gender, age (as its index in ``age_table``) and job id."""

    def __init__(self, index: object, gender: str, age: object, job_id: object) -> None:
        self.index = int(index)  # type: ignore[call-overload]
        self.is_male = gender == 'M'
        self.age = age_table.index(int(age))  # type: ignore[call-overload]
        self.job_id = int(job_id)  # type: ignore[call-overload]

    def value(self) -> list:
        """``[user id, 0 male or 1 female, age index, job id]``."""
        return [self.index, 0 if self.is_male else 1, self.age, self.job_id]

    def __str__(self) -> str:
        return "<UserInfo id(%d), gender(%s), age(%d), job(%d)>" % (
            self.index, "M" if self.is_male else "F", age_table[self.age], self.job_id)

    def __repr__(self) -> str:
        return str(self)


MOVIE_INFO: Optional[Dict[int, MovieInfo]] = None
MOVIE_TITLE_DICT: Optional[Dict[str, int]] = None
CATEGORIES_DICT: Optional[Dict[str, int]] = None
USER_INFO: Optional[Dict[int, UserInfo]] = None


def _movies(rng: np.random.RandomState, title_words: List[str]) -> Dict[int, MovieInfo]:
    cumulative = np.cumsum(_synthetic.zipf_probabilities(TITLE_WORDS))
    movies = {}
    for movie_id in range(1, MOVIES + 1):
        genres = rng.choice(len(GENRES), size=int(rng.randint(1, 4)), replace=False)
        ranks = _synthetic.zipf_ranks(rng, cumulative, int(rng.randint(1, 7)))
        title = " ".join(title_words[r].capitalize() for r in ranks)
        movies[movie_id] = MovieInfo(movie_id, [GENRES[g] for g in genres], title)
    return movies


def _initialize_meta_info() -> None:
    global MOVIE_INFO, MOVIE_TITLE_DICT, CATEGORIES_DICT, USER_INFO
    if MOVIE_INFO is not None:
        return
    rng = _synthetic.seeded("movielens", "meta")
    title_words = [_synthetic.pseudo_word(rank) for rank in range(TITLE_WORDS)]
    MOVIE_TITLE_DICT = {w: i for i, w in enumerate(title_words)}
    CATEGORIES_DICT = {c: i for i, c in enumerate(GENRES)}
    genders = rng.random_sample(USERS) < 0.7
    ages = rng.randint(0, len(age_table), size=USERS)
    jobs = rng.randint(0, JOBS, size=USERS)
    USER_INFO = {uid: UserInfo(uid, 'M' if genders[uid - 1] else 'F', age_table[ages[uid - 1]], jobs[uid - 1])
                 for uid in range(1, USERS + 1)}
    MOVIE_INFO = _movies(rng, title_words)


@functools.lru_cache(maxsize=1)
def _ratings() -> List[tuple]:
    """The (user id, movie id, stars) records, in file order."""
    _initialize_meta_info()
    assert MOVIE_INFO is not None and USER_INFO is not None
    rng = _synthetic.seeded("movielens", "ratings")
    user_lean = rng.normal(0.0, 0.6, size=USERS + 1)
    movie_lean = rng.normal(0.0, 0.6, size=MOVIES + 1)
    job_taste = rng.normal(0.0, 0.8, size=(JOBS, len(GENRES)))
    users = rng.randint(1, USERS + 1, size=RATINGS)
    movies = rng.randint(1, MOVIES + 1, size=RATINGS)
    noise = rng.normal(0.0, 0.4, size=RATINGS)
    records = []
    for uid, mid, jitter in zip(users.tolist(), movies.tolist(), noise.tolist()):
        first_genre = GENRES.index(MOVIE_INFO[mid].categories[0])
        score = 3.6 + user_lean[uid] + movie_lean[mid] + job_taste[USER_INFO[uid].job_id, first_genre] + jitter
        records.append((uid, mid, int(np.clip(np.rint(score), 1, 5))))
    return records


def _reader(rand_seed: int = 0, test_ratio: float = 0.1, is_test: bool = False) -> Iterator[list]:
    _initialize_meta_info()
    assert MOVIE_INFO is not None and USER_INFO is not None
    split = np.random.RandomState(rand_seed)
    for uid, mid, stars in _ratings():
        if (split.random_sample() < test_ratio) == is_test:
            rating = float(stars) * 2 - 5.0
            yield USER_INFO[uid].value() + MOVIE_INFO[mid].value() + [[rating]]


def _reader_creator(**kwargs: object) -> Callable[[], Iterator[list]]:
    return lambda: _reader(**kwargs)  # type: ignore[arg-type]


train = functools.partial(_reader_creator, is_test=False)
test = functools.partial(_reader_creator, is_test=True)


def get_movie_title_dict() -> Dict[str, int]:
    """``{lower-case title word: id}``, 5174 words."""
    _initialize_meta_info()
    assert MOVIE_TITLE_DICT is not None
    return MOVIE_TITLE_DICT


def max_movie_id() -> int:
    """The largest movie id (3952)."""
    _initialize_meta_info()
    assert MOVIE_INFO is not None
    return max(MOVIE_INFO.values(), key=lambda m: m.index).index


def max_user_id() -> int:
    """The largest user id (6040)."""
    _initialize_meta_info()
    assert USER_INFO is not None
    return max(USER_INFO.values(), key=lambda u: u.index).index


def max_job_id() -> int:
    """The largest job id (20)."""
    _initialize_meta_info()
    assert USER_INFO is not None
    return max(USER_INFO.values(), key=lambda u: u.job_id).job_id


def movie_categories() -> Dict[str, int]:
    """``{genre name: id}``, the 18 genres."""
    _initialize_meta_info()
    assert CATEGORIES_DICT is not None
    return CATEGORIES_DICT


def user_info() -> Dict[int, UserInfo]:
    """``{user id: UserInfo}``."""
    _initialize_meta_info()
    assert USER_INFO is not None
    return USER_INFO


def movie_info() -> Dict[int, MovieInfo]:
    """``{movie id: MovieInfo}``."""
    _initialize_meta_info()
    assert MOVIE_INFO is not None
    return MOVIE_INFO


def fetch() -> None:
    """Nothing to download: the samples are generated."""
