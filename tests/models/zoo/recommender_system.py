"""The recommender_system book chapter: user and movie features (id, gender, age and job
embeddings; movie categories pooled by ``sequence_pool``, the title through
``nets.sequence_conv_pool``), each side through an fc, their ``cos_sim`` scaled to a rating, a
square-error loss, SGD. Synthetic MovieLens-shaped data; small widths."""
import numpy as np

import fluidist as fluid

IS_SPARSE = True
USR_DICT_SIZE = 60
GENDER_DICT_SIZE = 2
AGE_DICT_SIZE = 7
JOB_DICT_SIZE = 21
MOV_DICT_SIZE = 80
CATEGORY_DICT_SIZE = 18
MOV_TITLE_DICT_SIZE = 200
EMB = 8
HIDDEN = 16


def get_usr_combined_features():
    uid = fluid.data(name="user_id", shape=[None], dtype="int64")
    usr_emb = fluid.embedding(input=uid, dtype="float32", size=[USR_DICT_SIZE, EMB],
                              param_attr="user_table", is_sparse=IS_SPARSE)
    usr_fc = fluid.layers.fc(input=usr_emb, size=EMB)

    usr_gender_id = fluid.data(name="gender_id", shape=[None], dtype="int64")
    usr_gender_emb = fluid.embedding(input=usr_gender_id, size=[GENDER_DICT_SIZE, EMB // 2],
                                     param_attr="gender_table", is_sparse=IS_SPARSE)
    usr_gender_fc = fluid.layers.fc(input=usr_gender_emb, size=EMB // 2)

    usr_age_id = fluid.data(name="age_id", shape=[None], dtype="int64")
    usr_age_emb = fluid.embedding(input=usr_age_id, size=[AGE_DICT_SIZE, EMB // 2], is_sparse=IS_SPARSE,
                                  param_attr="age_table")
    usr_age_fc = fluid.layers.fc(input=usr_age_emb, size=EMB // 2)

    usr_job_id = fluid.data(name="job_id", shape=[None], dtype="int64")
    usr_job_emb = fluid.embedding(input=usr_job_id, size=[JOB_DICT_SIZE, EMB // 2],
                                  param_attr="job_table", is_sparse=IS_SPARSE)
    usr_job_fc = fluid.layers.fc(input=usr_job_emb, size=EMB // 2)

    concat_embed = fluid.layers.concat(input=[usr_fc, usr_gender_fc, usr_age_fc, usr_job_fc], axis=1)
    return fluid.layers.fc(input=concat_embed, size=HIDDEN, act="tanh")


def get_mov_combined_features():
    mov_id = fluid.data(name="movie_id", shape=[None], dtype="int64")
    mov_emb = fluid.embedding(input=mov_id, dtype="float32", size=[MOV_DICT_SIZE, EMB],
                              param_attr="movie_table", is_sparse=IS_SPARSE)
    mov_fc = fluid.layers.fc(input=mov_emb, size=EMB)

    category_id = fluid.data(name="category_id", shape=[None], dtype="int64", lod_level=1)
    mov_categories_emb = fluid.embedding(input=category_id, size=[CATEGORY_DICT_SIZE, EMB], is_sparse=IS_SPARSE)
    mov_categories_hidden = fluid.layers.sequence_pool(input=mov_categories_emb, pool_type="sum")

    mov_title_id = fluid.data(name="movie_title", shape=[None], dtype="int64", lod_level=1)
    mov_title_emb = fluid.embedding(input=mov_title_id, size=[MOV_TITLE_DICT_SIZE, EMB], is_sparse=IS_SPARSE)
    mov_title_conv = fluid.nets.sequence_conv_pool(input=mov_title_emb, num_filters=EMB, filter_size=3,
                                                   act="tanh", pool_type="sum")

    concat_embed = fluid.layers.concat(input=[mov_fc, mov_categories_hidden, mov_title_conv], axis=1)
    return fluid.layers.fc(input=concat_embed, size=HIDDEN, act="tanh")


def inference_program():
    usr_combined_features = get_usr_combined_features()
    mov_combined_features = get_mov_combined_features()
    inference = fluid.layers.cos_sim(X=usr_combined_features, Y=mov_combined_features)
    return fluid.layers.scale(x=inference, scale=5.0)


def train_program():
    scale_infer = inference_program()
    label = fluid.data(name="score", shape=[None, 1], dtype="float32")
    square_cost = fluid.layers.square_error_cost(input=scale_infer, label=label)
    avg_cost = fluid.layers.mean(square_cost)
    return [avg_cost, scale_infer]


def build(lr=0.2):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        avg_cost, scale_infer = train_program()
        test_program = main.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=lr).minimize(avg_cost)
    return dict(main=main, startup=startup, test_program=test_program, loss=avg_cost,
                fetches={"prediction": scale_infer})


def batch(step, n, **options):
    """Ratings from hidden user and movie tastes, so that the model has something to learn."""
    taste_u = np.random.RandomState(21).uniform(-1, 1, (USR_DICT_SIZE, 3))
    taste_m = np.random.RandomState(22).uniform(-1, 1, (MOV_DICT_SIZE, 3))
    rng = np.random.RandomState(8000 + step)
    uid = rng.randint(0, USR_DICT_SIZE, n)
    mid = rng.randint(0, MOV_DICT_SIZE, n)
    score = np.clip(np.round(3 + 2 * (taste_u[uid] * taste_m[mid]).sum(1)), 1, 5)
    cat, cat_lens, title, title_lens = [], [], [], []
    for m in mid:
        k = 1 + m % 3
        cat.append((m * 7 + np.arange(k) * 5) % CATEGORY_DICT_SIZE)
        cat_lens.append(k)
        t = 2 + m % 4
        title.append((m * 13 + np.arange(t) * 29) % MOV_TITLE_DICT_SIZE)
        title_lens.append(t)
    col = lambda a: np.asarray(a, "int64").reshape(-1)  # noqa: E731
    return {"user_id": col(uid), "gender_id": col(uid % GENDER_DICT_SIZE), "age_id": col(uid % AGE_DICT_SIZE),
            "job_id": col(uid % JOB_DICT_SIZE), "movie_id": col(mid),
            "category_id": (col(np.concatenate(cat)), cat_lens),
            "movie_title": (col(np.concatenate(title)), title_lens),
            "score": score.astype("float32").reshape(-1, 1)}
