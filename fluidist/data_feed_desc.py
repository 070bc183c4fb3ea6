"""``fluid.data_feed_desc``: Paddle's ``DataFeedDesc`` configured a C++ data feed from a protobuf text
file. fluidist's datasets take their slots from the variables instead."""
from .compat import refused_class

__all__ = ["DataFeedDesc"]

DataFeedDesc = refused_class("fluid.DataFeedDesc",
                             "create the dataset with fluid.DatasetFactory().create_dataset(...) and give it "
                             "its slots with dataset.set_use_var([...]) and set_batch_size(n)")
