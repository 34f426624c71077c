"""The C++ trainer's generated task (examples/train/data.cc make_generated)
in numpy: the same Philox numbers, so the same rows, bit for bit (the FNV-1a
digest the C++ trainer's checkpoint names matches; tests/python checks it).
Needs numpy only, so that tide's Python trainer and the PyTorch peers train
on the same data."""
import numpy as np

MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(counter, seed):
    """Random123's philox4x32_10 of counters (uint64 array) under a 64-bit
    key, as tide's ops/philox.h: the four 32-bit words of each block."""
    c0 = counter & MASK32
    c1 = counter >> np.uint64(32)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0 = np.uint64(seed & 0xFFFFFFFF)
    k1 = np.uint64((seed >> 32) & 0xFFFFFFFF)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & MASK32, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & MASK32
        k0 = (k0 + np.uint64(0x9E3779B9)) & MASK32
        k1 = (k1 + np.uint64(0xBB67AE85)) & MASK32
    return np.stack([c0, c1, c2, c3], axis=1)


def uniforms(seed, n):
    """The first n values of the C++ generator's Uniform(seed): lane j % 4 of
    Philox block j / 4, each word / 2^32."""
    blocks = (n + 3) // 4
    words = philox4x32_10(np.arange(blocks, dtype=np.uint64), seed).reshape(-1)[:n]
    return words.astype(np.float64) * (1.0 / 4294967296.0)


def normals(u):
    """Box-Muller of consecutive pairs, as Uniform::normal: 1 - u1, cos."""
    u1, u2 = 1.0 - u[0::2], u[1::2]
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)


def make_generated(train_rows, test_rows, features, classes, seed, clusters=3, noise=0.9):
    """examples/train/data.cc's make_generated, vectorised."""
    nblobs = classes * clusters
    centre = 0.5 * normals(uniforms((seed ^ 0x5EEDC1A55E5) & (2**64 - 1), 2 * nblobs * features))
    centre = centre.reshape(nblobs, features)

    def generate(rows, stream):
        per_row = 1 + 2 * features  # below(), then a normal per feature
        u = uniforms((seed * 0x9E3779B97F4A7C15 + stream) & (2**64 - 1), rows * per_row).reshape(rows, per_row)
        blob = (u[:, 0] * nblobs).astype(np.int64)
        z = normals(u[:, 1:].reshape(-1)).reshape(rows, features)
        x = (centre[blob] + noise * z).astype(np.float32)
        return x, (blob % classes).astype(np.int32)

    return generate(train_rows, 1), generate(test_rows, 2)


class Sampler:
    """examples/train/data.cc's Sampler: the rows each rank uses at each
    step. Every epoch is a Fisher-Yates shuffle of all rows under
    Uniform(seed * 0xD1B54A32D192ED03 + epoch); rank r's rows of step t are
    the batch at t * batch * ranks + r * batch of it."""

    def __init__(self, rows, batch, rank, ranks, seed):
        if batch < 1:
            raise ValueError("batch per rank must be >= 1")
        self.rows, self.batch, self.rank, self.ranks, self.seed = rows, batch, rank, ranks, seed
        self.steps_per_epoch = rows // (batch * ranks)
        if self.steps_per_epoch < 1:
            raise ValueError("the training set (%d rows) is smaller than one global batch (%d)"
                             % (rows, batch * ranks))
        self.epoch, self.perm = -1, None

    def _shuffle(self, epoch):
        perm = list(range(self.rows))
        u = uniforms((self.seed * 0xD1B54A32D192ED03 + epoch) & (2**64 - 1), self.rows - 1)
        top = np.arange(self.rows - 1, 0, -1)
        picks = (u * (top + 1).astype(np.float64)).astype(np.int64).tolist()  # Uniform::below(i + 1)
        for i, j in zip(top.tolist(), picks):
            perm[i], perm[j] = perm[j], perm[i]
        self.perm, self.epoch = np.array(perm, dtype=np.int64), epoch

    def rows_for(self, step):
        epoch, t = divmod(step, self.steps_per_epoch)
        if epoch != self.epoch:
            self._shuffle(epoch)
        first = t * self.batch * self.ranks + self.rank * self.batch
        return self.perm[first:first + self.batch]
