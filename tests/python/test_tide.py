"""The Python frontend: values against numpy, errors, blockers, the GIL, no
leaks, lifetimes, and two ranks under mpirun. Run by ctest (python.pytest)
with PYTHONPATH at the build's python/ folder:
  PYTHONPATH=build/python python3 -m pytest -q tests/python"""
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import tide

RT = tide.init() if not tide.initialized() else tide.runtime()


def run_python(code, env_extra=None, launcher=()):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([*launcher, sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=120)


def test_values_match_numpy():
    a = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32)
    ta, tb = tide.from_numpy(a), tide.from_numpy(b)
    np.testing.assert_allclose((ta @ tb).numpy(), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose((ta * 2 + 1).numpy(), a * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose((1 - ta).numpy(), 1 - a, rtol=1e-6)
    np.testing.assert_allclose((2 / (tide.exp(ta) + 1)).numpy(), 2 / (np.exp(a) + 1), rtol=1e-5)
    np.testing.assert_allclose(tide.relu(-ta).numpy(), np.maximum(-a, 0))
    np.testing.assert_allclose(tide.sum(ta, axis=1).numpy(), a.sum(axis=1), rtol=1e-5)
    assert tide.sum(ta).item() == pytest.approx(float(a.sum()), rel=1e-5)
    assert tide.max(ta).item() == pytest.approx(float(a.max()))
    np.testing.assert_array_equal(tide.argmax(ta, 1).numpy(), a.argmax(axis=1))
    f64 = tide.from_numpy(np.arange(6, dtype=np.float64).reshape(2, 3))
    assert f64.dtype == "f64" and f64.shape == (2, 3) and len(f64) == 2
    np.testing.assert_array_equal(f64.numpy(), np.arange(6.0).reshape(2, 3))
    i = tide.from_numpy(np.array([1, -2, 3], dtype=np.int32))
    assert i.dtype == "i32" and tide.sum(i).item() == 2 and isinstance(tide.sum(i).item(), int)


def test_from_numpy_copies_at_call_time():
    a = np.ones(4, dtype=np.float32)
    t = tide.from_numpy(a)
    a[:] = 7
    np.testing.assert_array_equal(t.numpy(), np.ones(4))


def test_from_numpy_takes_or_refuses_every_odd_array():
    # In a child process: a crash (numpy's failed copy was once dereferenced
    # as null) fails this test instead of ending pytest.
    r = run_python("""
        import numpy as np, tide
        tide.init()

        def same(a, name):
            t = tide.from_numpy(a)
            assert t.shape == a.shape, (name, t.shape, a.shape)
            np.testing.assert_array_equal(t.numpy(), a, err_msg=name)

        ro = np.arange(6, dtype=np.float32).reshape(2, 3)
        ro.setflags(write=False)
        odd = {
            "strided": np.arange(20, dtype=np.float32)[::3],
            "reversed": np.arange(5, dtype=np.float64)[::-1],
            "fortran": np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4)),
            "transposed": np.arange(12, dtype=np.int32).reshape(3, 4).T,
            "zero strides": np.broadcast_to(np.float32(2.5), (4, 3)),
            "zero strides in a column": np.broadcast_to(np.arange(3, dtype=np.int32)[:, None], (3, 5)),
            "no elements": np.zeros((0,), np.float32),
            "no elements in a middle extent": np.zeros((3, 0, 2), np.float64),
            "0-d": np.array(7.5, dtype=np.float32),
            "read-only": ro,
            "big-endian f32": np.arange(4, dtype=">f4"),
            "big-endian f64": np.arange(4, dtype=">f8"),
            "big-endian i32": np.arange(-2, 2, dtype=">i4"),
            "unaligned": np.frombuffer(b"\\0" + np.arange(3, dtype=np.float32).tobytes(), dtype=np.float32, offset=1),
        }
        for name, a in odd.items():
            same(a, name)

        # Random layouts: any dtype, byte order, slicing and axis order.
        rng = np.random.default_rng(7)
        kinds = ["f4", "f8", "i4", "i8", "f2", "u4", "b1", "c8"]
        taken = refused = 0
        for i in range(300):
            ndim = int(rng.integers(0, 4))
            dims = [int(rng.integers(0, 5)) for _ in range(ndim)]
            code = rng.choice(["<", ">"]) + str(rng.choice(kinds))
            base = (rng.standard_normal([2 * d + 1 for d in dims]) * 100).astype(code)
            a = np.asarray(base[tuple(slice(None, None, int(rng.choice([1, 2, -1]))) for _ in dims)])
            if ndim > 1:
                a = a.transpose(rng.permutation(ndim))
            if code[1:] in ("f4", "f8", "i4", "i8", "b1"):
                same(a, "random %d (%s, shape %s, strides %s)" % (i, code, a.shape, a.strides))
                taken += 1
            else:
                try:
                    tide.from_numpy(a)
                except tide.DTypeError as e:
                    assert "float32, float64, int32, int64 and bool" in str(e), str(e)
                    refused += 1
                else:
                    raise AssertionError("dtype %s was taken" % code)
        assert taken > 50 and refused > 50, (taken, refused)

        def raises(make, exc, name):
            try:
                tide.from_numpy(make())
            except exc:
                return
            raise AssertionError(name + " was taken")

        raises(lambda: np.broadcast_to(np.float32(0), (2 ** 40,)), MemoryError, "4 TiB of zero strides")
        raises(lambda: np.array([1, "a"], dtype=object), tide.DTypeError, "objects")
        raises(lambda: np.array(["x"]), tide.DTypeError, "strings")
        raises(lambda: np.zeros(2, dtype=[("a", "f4")]), tide.DTypeError, "records")
        try:
            tide.from_numpy([1.0, 2.0])
        except TypeError:
            pass
        else:
            raise AssertionError("a list was taken")
        print("odd arrays OK")
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "odd arrays OK" in r.stdout


def test_truth_and_numbers_of_one_element_tensors():
    assert bool(tide.ones([1])) is True
    assert bool(tide.zeros([1])) is False
    assert bool(tide.full([1, 1], -3.0)) is True
    assert float(tide.full([1], 2.5)) == 2.5 and int(tide.full([1], 2.5)) == 2
    assert int(tide.from_numpy(np.array([-7], dtype=np.int32))) == -7
    for shape in ([2], [0], [2, 3]):
        with pytest.raises(ValueError, match="ambiguous"):
            bool(tide.zeros(shape))
        with pytest.raises(TypeError, match="one-element"):
            float(tide.zeros(shape))


def test_creation_and_seeds():
    assert tide.zeros([2, 3]).numpy().sum() == 0
    np.testing.assert_array_equal(tide.full([2], 2.5, dtype="f64").numpy(), [2.5, 2.5])
    np.testing.assert_array_equal(tide.arange(4).numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(tide.randn([100], seed=3).numpy(), tide.randn([100], seed=3).numpy())
    z = tide.randn([100000], seed=5).numpy()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02


def test_binary_ops_broadcast_as_numpy_does():
    rng = np.random.default_rng(4)
    pairs = [((4, 5), (5,)), ((4, 5), (4, 1)), ((4, 1), (1, 5)), ((), (3, 2)), ((2, 1, 3), (4, 1)),
             ((0, 3), (3,)), ((8, 1, 6, 1), (7, 1, 5))]
    for sa, sb in pairs:
        for x_shape, y_shape in ((sa, sb), (sb, sa)):
            x = rng.integers(1, 5, size=x_shape).astype(np.float32)
            y = rng.integers(1, 5, size=y_shape).astype(np.float32)
            tx, ty = tide.from_numpy(x), tide.from_numpy(y)
            for got, want in ((tx + ty, x + y), (tx - ty, x - y), (tx * ty, x * y), (tx / ty, x / y)):
                assert got.shape == want.shape, (x_shape, y_shape)
                np.testing.assert_array_equal(got.numpy(), want)
    w = tide.zeros([3, 4])
    alias = w
    w += tide.arange(4)  # in place: b broadcasts to w's shape, every handle sees it
    w *= 2
    w -= tide.ones([3, 1])
    w += 0.5
    np.testing.assert_array_equal(alias.numpy(), (np.zeros((3, 4)) + np.arange(4)) * 2 - 1 + 0.5)
    with pytest.raises(tide.ShapeError, match="does not broadcast to a's shape"):
        alias += tide.ones([2, 3, 4])
    with pytest.raises(tide.ShapeError, match="axis -1: 3 against 4"):
        tide.ones([2, 3]) + tide.ones([4])


def test_errors_are_tide_exceptions_with_the_message():
    with pytest.raises(tide.ShapeError, match=r"shapes \[2\] and \[3\] do not broadcast"):
        tide.add(tide.ones([2]), tide.ones([3]))
    with pytest.raises(tide.DTypeError, match="got float16"):
        tide.from_numpy(np.arange(3, dtype=np.float16))
    with pytest.raises(tide.DTypeError, match="expected f32, f64, i32, i64 or bool"):
        tide.zeros([2], dtype="f16")
    with pytest.raises(tide.ShapeError, match="one element"):
        tide.ones([2]).item()
    with pytest.raises(tide.UsageError, match="already initialised"):
        tide.init()
    assert issubclass(tide.ShapeError, tide.Error) and issubclass(tide.Error, RuntimeError)


def test_a_failed_op_raises_at_the_blocker():
    # log of an int tensor is refused on the frontend, before anything runs
    with pytest.raises(tide.Error):
        tide.log(tide.from_numpy(np.array([1], dtype=np.int32)))


def test_repr_and_wait_to_read_are_blockers():
    before = RT.stats().blockers
    t = tide.ones([1, 2]) * 3
    assert t.wait_to_read() is not None
    assert "tensor([[3., 3.]]" in repr(t)
    assert RT.stats().blockers >= before + 2


def test_steps_are_context_managers_and_policies_apply():
    p = tide.SyncPolicy.steps(1)
    RT.set_policy(p)
    try:
        for _ in range(5):
            with RT.step():
                tide.ones([8]) + 1
        assert RT.policy.max_inflight_steps == 1
    finally:
        RT.set_policy(tide.SyncPolicy())
    tide.wait_all()


def test_stats_has_every_field_and_they_move():
    ints = ("ops_pushed", "ops_completed", "ops_failed", "ops_skipped", "cross_stream_waits", "blockers",
            "blocked_ns", "stalls", "stalled_ns", "stalls_steps", "stalls_ops", "stalls_bytes", "queued_ops",
            "queued_bytes", "peak_queued_ops", "peak_queued_bytes", "backend_busy_ns", "busy_ns", "steps_begun",
            "peak_inflight_steps")
    tide.wait_all()
    before = RT.stats()
    # One step in flight at most, and each step's matmuls take milliseconds
    # while the next step begins microseconds later: the step gate stalls.
    RT.set_policy(tide.SyncPolicy.steps(1))
    try:
        a = tide.randn([500, 500], seed=2)
        for _ in range(4):
            with RT.step():
                for _ in range(3):
                    a = tide.matmul(a, a) * 0.001
    finally:
        RT.set_policy(tide.SyncPolicy())
    tide.sum(a).item()  # a blocker
    tide.wait_all()
    s = RT.stats()
    for name in ints:
        v = getattr(s, name)
        assert type(v) is int and v >= 0, f"{name} = {v!r}"
    assert type(s.stalling) is bool and not s.stalling
    assert s.steps_begun - before.steps_begun == 4
    assert s.stalls_steps > before.stalls_steps, str(s)
    assert s.stalls > before.stalls and s.stalled_ns > before.stalled_ns, str(s)
    assert s.stalls - before.stalls == sum(getattr(s, f) - getattr(before, f)
                                            for f in ("stalls_steps", "stalls_ops", "stalls_bytes"))
    assert s.peak_inflight_steps >= 1
    assert s.blockers >= before.blockers + 2 and s.blocked_ns >= before.blocked_ns
    pushed = s.ops_pushed - before.ops_pushed
    assert pushed >= 26 and s.ops_completed - before.ops_completed == pushed
    assert s.queued_ops == 0 and s.peak_queued_ops >= 1 and s.peak_queued_bytes >= s.queued_bytes
    sites = s.blocker_sites
    assert sites and all(isinstance(b, tide.BlockerSite) for b in sites)
    assert all(type(b.kind) is str and type(b.call_site) is str and b.count >= 1 and b.blocked_ns >= 0
               for b in sites)
    assert {"item", "wait_all"} <= {b.kind for b in sites}, sites
    assert sum(b.count for b in sites) == s.blockers and sum(b.blocked_ns for b in sites) == s.blocked_ns
    streams = s.streams
    assert streams and all(isinstance(st, tide.StreamStat) and type(st.name) is str and st.ops >= 1
                           for st in streams), streams
    assert s.backend_busy_ns == s.busy_ns == sum(st.busy_ns for st in streams) > before.backend_busy_ns
    assert sum(st.ops for st in streams) > sum(st.ops for st in before.streams)
    with pytest.raises(AttributeError):
        s.stalls_steps = 0  # read-only


def test_waiting_releases_the_gil():
    # Another Python thread counts while the main thread waits for work
    # that takes a while (matmuls of 1000 x 1000).
    a = tide.randn([1000, 1000], seed=1)
    ticks = [0]
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks[0] += 1

    th = threading.Thread(target=count)
    for _ in range(8):
        a = tide.matmul(a, a) * 0.001
    th.start()
    start = ticks[0]
    t0 = time.perf_counter()
    tide.wait_all()
    waited = time.perf_counter() - t0
    done.set()
    th.join()
    assert waited > 0.005, "the work finished before the wait began; make it larger"
    assert ticks[0] - start > 1000, f"only {ticks[0] - start} ticks while waiting {waited:.3f} s"


def test_a_loop_of_ops_does_not_leak():
    # The queue's high-water mark may rise in any round (a loaded machine lets
    # the frontend run further ahead, up to the sync policy's caps), so one
    # round's growth proves nothing. A leak grows every round: at 11 bytes an
    # op, by over 512 KiB a round. One quiet round is enough to clear it.
    def rss_kb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    x = tide.ones([16])
    for _ in range(20000):  # warm-up: caches, op records
        y = x + 1
    tide.wait_all()
    grown = []
    for _ in range(5):
        before = rss_kb()
        for _ in range(50000):
            y = x + 1
        tide.wait_all()
        grown.append(rss_kb() - before)
    assert min(grown) < 512, f"resident memory grew in every round of 50,000 ops (KiB): {grown}"
    del y


def test_a_tensor_outliving_its_runtime_raises_not_crashes():
    r = run_python("""
        import tide
        rt = tide.init()
        t = tide.ones([2]) + 1
        s = rt.step()
        tide.shutdown()
        for f in (t.numpy, lambda: tide.ones([2]), lambda: rt.rank, rt.stats, s.__enter__):
            try:
                f()
            except tide.UsageError as e:
                print("UsageError:", e)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("UsageError:") == 5, r.stdout + r.stderr


def test_two_ranks_under_mpirun():
    mpirun = [os.environ.get("TIDE_TEST_MPIEXEC", "mpirun"), "--oversubscribe", "-np", "2"]
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    r = run_python("""
        import tide
        rt = tide.init()
        t = tide.full([3], rt.rank + 1.0)
        s = tide.all_reduce(t)
        g = tide.all_gather(tide.full([1], float(rt.rank)))
        rt.log(f"size {rt.size} sum {s.numpy().tolist()} gathered {g.numpy().tolist()}")
    """, env, mpirun)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "size 2 sum [3.0, 3.0, 3.0] gathered [[0.0], [1.0]]" in r.stdout, r.stdout + r.stderr
    assert r.stdout.count("size 2") == 1, "rank 0 alone logs"


def test_a_count_mismatch_ends_both_ranks_promptly_naming_one_cause():
    # Rank 1 all-reduces 999 elements, rank 0 1000: MPI fails on rank 1,
    # which tells rank 0 at once (before, rank 0 waited out the whole
    # timeout, then blamed a rank "in no collective").
    mpirun = [os.environ.get("TIDE_TEST_MPIEXEC", "mpirun"), "--oversubscribe", "-np", "2"]
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "TIDE_COMM_TIMEOUT": "60"}
    start = time.monotonic()
    r = run_python("""
        import tide
        rt = tide.init()
        s = tide.all_reduce(tide.full([1000 if rt.rank == 0 else 999], 1.0))
        s.numpy()
        for _ in range(3):
            s = tide.all_reduce(s)
        s.numpy()
    """, env, mpirun)
    elapsed = time.monotonic() - start
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert elapsed < 30, "took %.1f s (the timeout is 60 s):\n%s" % (elapsed, out)
    for rank in (0, 1):
        lines = [l for l in out.splitlines() if l.startswith("tide: rank %d: " % rank) and "all_reduce #0 (" in l]
        assert lines, "rank %d named no failure of all_reduce #0:\n%s" % (rank, out)


def _examples():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "examples", "python")


@pytest.mark.parametrize("ranks", [1, 2])
def test_the_python_trainer_prints_the_cpp_trainers_losses(ranks):
    # The same rows, sampler, initial weights, ops (autograd on both sides)
    # and reducer: the same losses and held-out accuracy, to every digit.
    trainer = os.environ.get("TIDE_TEST_TRAINER")
    if not trainer:
        pytest.skip("TIDE_TEST_TRAINER (the C++ trainer) not given")
    mpirun = [os.environ.get("TIDE_TEST_MPIEXEC", "mpirun"), "--oversubscribe", "-np", str(ranks)]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    flags = ["--max-steps", "150", "--log-every", "50", "--bucket-mb", "0.25"]
    py = subprocess.run([*mpirun, sys.executable, os.path.join(_examples(), "train_mlp.py"), *flags],
                        capture_output=True, text=True, env=env, timeout=300)
    cc = subprocess.run([*mpirun, trainer, *flags, "--epochs", "1000", "--progress", "lines"],
                        capture_output=True, text=True, env=env, timeout=300)
    assert py.returncode == 0 and cc.returncode == 0, py.stdout + py.stderr + cc.stdout + cc.stderr

    def losses(out):
        import re
        return re.findall(r"^step \d+/\d+ .*? loss ([0-9.]+)", out, re.M)

    def accuracy(out):
        return out.split("held-out accuracy ")[1].split("%")[0]

    assert len(losses(py.stdout)) == 3, py.stdout
    assert losses(py.stdout) == losses(cc.stdout)[:3], py.stdout + cc.stdout
    assert accuracy(py.stdout) == accuracy(cc.stdout), py.stdout + cc.stdout


def test_the_python_trainer_generates_the_cpp_trainers_rows():
    # The C++ trainer's checkpoint names its data by an FNV-1a digest of the
    # rows and labels; the Python generator must give the same bytes.
    trainer = os.environ.get("TIDE_TEST_TRAINER")
    if not trainer:
        pytest.skip("TIDE_TEST_TRAINER (the C++ trainer) not given")
    import tempfile
    sys.path.insert(0, _examples())
    from generated_task import make_generated
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([trainer, "--max-steps", "1", "--checkpoint", d, "--progress", "lines"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        with open(os.path.join(d, "checkpoint.safetensors"), "rb") as f:
            raw = f.read()
    import json as _json
    import struct
    (n,) = struct.unpack("<Q", raw[:8])
    fingerprint = _json.loads(raw[8:8 + n])["__metadata__"]["fingerprint"]
    (x, y), _ = make_generated(24576, 4096, 64, 10, 1234)
    h, mask = 1469598103934665603, (1 << 64) - 1
    for b in (x.tobytes(), y.tobytes()):
        words = np.frombuffer(b[:len(b) // 8 * 8], dtype="<u8")
        for w in words.tolist():
            h = ((h ^ w) * 1099511628211) & mask
        for c in b[len(b) // 8 * 8:]:
            h = ((h ^ c) * 1099511628211) & mask
    assert f"fnv1a64:{h:016x}" in fingerprint, fingerprint


def test_the_python_trainer_on_two_ranks():
    mpirun = [os.environ.get("TIDE_TEST_MPIEXEC", "mpirun"), "--oversubscribe", "-np", "2"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run([*mpirun, sys.executable, os.path.join(_examples(), "train_mlp.py"), "--steps", "200",
                        "--log-every", "100", "--bucket-mb", "0.25"], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 rank(s)" in r.stdout and r.stdout.count("trained 200 steps") == 1, r.stdout
    acc = float(r.stdout.split("held-out accuracy ")[1].split("%")[0])
    assert acc > 80, r.stdout


def test_call_sites_are_the_python_lines():
    assert tide.python_call_sites()
    import inspect
    logits = tide.from_numpy(np.array([[1.0, 2.0]], dtype=np.float32))
    labels = tide.from_numpy(np.array([7], dtype=np.int32))
    pushed_at = inspect.currentframe().f_lineno + 1
    loss, _ = tide.softmax_cross_entropy(logits, labels)  # label 7 of 2 classes: the kernel fails
    with pytest.raises(tide.BackendError) as e:
        loss.item()
    read_at = inspect.currentframe().f_lineno - 1
    assert f"test_tide.py:{pushed_at} (test_call_sites_are_the_python_lines)" in str(e.value), str(e.value)
    assert f"test_tide.py:{read_at}" in str(RT.stats()), str(RT.stats())
    printed_at = inspect.currentframe().f_lineno + 1
    repr(tide.ones([2]) * 2)
    sites = [b for b in RT.stats().blocker_sites if b.kind == "print"]
    assert any(f"test_tide.py:{printed_at}" in b.call_site for b in sites), sites


def test_version_and_no_stray_names():
    # The version the build reports (CMakeLists.txt's project()), and nothing
    # of the package's own imports among its public names.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "CMakeLists.txt")) as f:
        want = next(line.split("VERSION")[1].split()[0] for line in f if line.startswith("project(tide"))
    assert tide.__version__ == want
    public = {n for n in dir(tide) if not n.startswith("_")}
    assert not public & {"os", "sys", "atexit"}, public & {"os", "sys", "atexit"}


def test_the_first_op_starts_the_runtime_without_init():
    # As `import torch` needs no set-up: a world of one; tide.init() after it
    # hands back that runtime, and with arguments says it is too late.
    r = run_python("""
        import tide
        print("initialized", tide.initialized())
        print("values", (tide.ones([2]) + 1).numpy().tolist())
        rt = tide.init()
        print("rank", rt.rank, "of", rt.size, tide.initialized())
        try:
            tide.init(["python", "--x"])
        except tide.UsageError as e:
            print("UsageError:", e)
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "initialized False" in r.stdout and "values [2.0, 2.0]" in r.stdout, r.stdout + r.stderr
    assert "rank 0 of 1 True" in r.stdout, r.stdout + r.stderr
    assert "UsageError: tide.init(): the first op already started the runtime" in r.stdout, r.stdout + r.stderr


def test_the_first_collective_joins_the_launchers_world_without_init():
    mpirun = [os.environ.get("TIDE_TEST_MPIEXEC", "mpirun"), "--oversubscribe", "-np", "2"]
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    r = run_python("""
        import sys, tide
        s = tide.all_reduce(tide.ones([1])).item()
        rt = tide.runtime()
        sys.stdout.write("rank %d of %d sum %.1f\\n" % (rt.rank, rt.size, s))
    """, env, mpirun)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(" of 2 sum 2.0") == 2, r.stdout + r.stderr


def test_reducer_no_sync_accumulates_micro_batches():
    # Two micro-batches under no_sync sum on the rank; the third, outside
    # it, reduces the sum of all three (avg over one rank: the sum itself).
    r = tide.GradientReducer([tide.zeros([3]), tide.zeros([2])], first_bucket_mb=0)

    def push(g0, g1):
        r.push_gradient(1, tide.from_numpy(np.array(g1, np.float32)))
        r.push_gradient(0, tide.from_numpy(np.array(g0, np.float32)))

    for k, (g0, g1) in enumerate([([1.0, 2.0, 3.0], [1.0, 1.0]), ([10.0, 20.0, 30.0], [2.0, 2.0])]):
        with r.no_sync():  # the micro-batch ends (finish_step) under the guard
            assert not r.syncing
            push(g0, g1)
            r.finish_step()
        assert r.accumulated == k + 1
    assert r.syncing
    push([100.0, 200.0, 300.0], [4.0, 4.0])
    assert r.reduced(0).numpy().tolist() == [111.0, 222.0, 333.0]
    assert r.reduced(1).numpy().tolist() == [7.0, 7.0]
    r.finish_step()
    assert r.accumulated == 0


def test_views_share_storage_and_layout_ops_reorder():
    a = tide.from_numpy(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    r = a.reshape(4, -1)
    assert r.shape == (4, 6) and a.view([6, 4]).shape == (6, 4) and a.reshape((24,)).shape == (24,)
    r += 1  # through the view: the base sees it
    np.testing.assert_array_equal(a.numpy(), np.arange(24).reshape(2, 3, 4) + 1)
    assert a.flatten().shape == (24,)
    assert a.unsqueeze(0).shape == (1, 2, 3, 4) and a.unsqueeze(-1).squeeze(-1).shape == (2, 3, 4)
    assert tide.ones([1, 3, 1]).squeeze().shape == (3,)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = tide.from_numpy(x)
    np.testing.assert_array_equal(t.T.numpy(), x.T)
    np.testing.assert_array_equal(t.transpose(0, 2).numpy(), x.transpose(2, 1, 0))
    np.testing.assert_array_equal(t.permute(1, 2, 0).numpy(), x.transpose(1, 2, 0))
    np.testing.assert_array_equal(tide.transpose(t).numpy(), x.swapaxes(-2, -1))
    with pytest.raises(tide.ShapeError, match="cannot be viewed as"):
        t.reshape(5, 5)
    with pytest.raises(tide.ShapeError, match="not a permutation"):
        t.permute(0, 0, 1)
    with pytest.raises(tide.ShapeError, match="out of range"):
        t.permute(0, 1, 3)
    with pytest.raises(tide.ShapeError, match="out of range"):
        t.transpose(0, 3)
    assert tide.broadcast_shapes([8, 1, 6, 1], [7, 1, 5]) == [8, 7, 6, 5]


def test_rows_and_leading_slices_are_views_and_take_assignment():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = tide.from_numpy(x)
    row = t[1]
    row += 100  # through the view: t sees it
    t[0] += 1  # __getitem__, __iadd__ on the view, __setitem__ with the view itself
    t[2, 1:3] = tide.full([2], -1.0)
    t[2, 3] = 7
    t[0:1] = tide.full([4], 5.0)  # broadcast
    x[1] += 100
    x[0] = 5
    x[2, 1:3] = -1
    x[2, 3] = 7
    np.testing.assert_array_equal(t.numpy(), x)
    whole, part = np.from_dlpack(t), np.from_dlpack(t[1:])
    assert np.shares_memory(whole, part) and part.shape == (2, 4)
    np.testing.assert_array_equal(part, x[1:])
    col = t[:, 1]  # not one run: a mirror, which writes reach both ways
    col += 1000
    x[:, 1] += 1000
    np.testing.assert_array_equal(t.numpy(), x)
    t[:, 1] = 0  # but assignment through the key writes t's elements, as numpy
    x[:, 1] = 0
    np.testing.assert_array_equal(t.numpy(), x)
    # t[:, j] += x: the pull, the add and its write-back; __setitem__ then
    # gets the mirror of those very elements and pushes nothing. (A live
    # mirror of t, as col, would also take a pull after the write-back.)
    del col
    before = RT.stats().ops_pushed
    t[:, 2] += 7
    assert RT.stats().ops_pushed - before == 3
    x[:, 2] += 7
    np.testing.assert_array_equal(t.numpy(), x)
    t[:, 2] = t[:, 3]  # the mirror of other elements is written through
    x[:, 2] = x[:, 3]
    np.testing.assert_array_equal(t.numpy(), x)
    with pytest.raises(tide.DTypeError, match="does not promote"):
        t[0] = tide.zeros([4], dtype="f64")
    with pytest.raises(TypeError, match="a tide.Tensor or a number"):
        t[0] = "a"
    # As numpy: leading axes of extent 1 dropped, numpy's scalars, -0 kept,
    # integers exact beyond 2^53.
    t[1] = tide.full([1, 1, 4], 2.0)
    t[2, :2] = np.float32(-0.0)
    x[1] = 2
    x[2, :2] = -0.0
    got = t.numpy()
    np.testing.assert_array_equal(got, x)
    assert np.signbit(got[2, 0]) and np.signbit(got[2, 1])
    big = tide.zeros([3], dtype="i64")
    big[1] = 2**60 + 1
    assert big.numpy().tolist() == [0, 2**60 + 1, 0]
    # Bad input pushes nothing.
    leaf = tide.zeros([2], requires_grad=True)
    with pytest.raises(tide.UsageError, match="in-place"):
        leaf[0] = 5.0
    with pytest.raises(tide.UsageError, match="in-place"):
        t[0] = leaf[0]
    with tide.no_grad():
        leaf[1] = 5.0
    assert leaf.tolist() == [0.0, 5.0]
    cases = [((slice(None), 1), tide.ones([2]), tide.ShapeError), (0, tide.ones([2, 4]), tide.ShapeError),
             (0, leaf[0], tide.UsageError), (0, 1.0 + 0 * leaf.sum(), tide.UsageError),
             (0, tide.ones([4], dtype="f64"), tide.DTypeError), (0, "a", TypeError),
             (slice(0, 0), "a", TypeError), (7, 0.0, IndexError), ((slice(None), 1), leaf[0], tide.UsageError),
             ((slice(None, None, 2), 0), tide.ones([3]), tide.ShapeError)]
    before = RT.stats().ops_pushed
    for key, value, err in cases:
        with pytest.raises(err):
            t[key] = value
    assert RT.stats().ops_pushed == before
    # x[1:] += x[:-1] adds the old values, as numpy does.
    y = tide.arange(6, dtype="f32")
    tail = y[1:]
    tail += y[:-1]
    assert y.numpy().tolist() == [0, 1, 3, 5, 7, 9]


def test_basic_indexing_as_numpy():
    x = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    t = tide.from_numpy(x)
    keys = [0, -1, (1, 2), (1, 2, 3), slice(None), slice(1, None), slice(None, None, -1), (slice(None), 1),
            (Ellipsis, 2), (Ellipsis, slice(None, None, 2)), (None, 0), (0, None, slice(1, 4)),
            (slice(2, 0, -1), Ellipsis, slice(-2, None)), (slice(5, 9),), (1, slice(3, 1))]
    for key in keys:
        got = t[key]
        want = x[key]
        assert got.shape == want.shape, key
        np.testing.assert_array_equal(got.numpy(), want, err_msg=str(key))
    assert [row.shape for row in tide.ones([3, 2])] == [(2,)] * 3  # iteration stops at IndexError
    with pytest.raises(IndexError):
        t[3]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0, 0]
    with pytest.raises(TypeError, match="ints, slices, None"):
        t["a"]
    np.testing.assert_array_equal(t[np.int64(1), np.int32(-1)].numpy(), x[1, -1])  # numpy's ints index too
    with pytest.raises(TypeError, match="boolean"):
        t[True]
    with pytest.raises(IndexError):
        t[2**70]
    np.testing.assert_array_equal(t[::2**62].numpy(), x[::2**62])
    with pytest.raises(tide.ShapeError, match="out of range"):
        t.permute(2**32, 1, 0)


def test_numpy_sees_values_and_repr_shows_floats():
    t = tide.full([2, 2], 3.0)
    a = np.asarray(t)
    assert a.dtype == np.float32 and a.shape == (2, 2) and (a == 3).all()
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(np.array(tide.arange(3, dtype="i32")), [0, 1, 2])
    assert "tensor([[3., 3.]," in repr(t)
    assert "tensor([1, 2]" in repr(tide.arange(1, 3, dtype="i32"))


def test_dlpack_shares_with_numpy_and_takes_from_it():
    t = tide.arange(6, dtype="f64").reshape(2, 3) * 2
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)  # zero-copy: waits for the producer, then shares the storage
    np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3) * 2)
    t += 1
    t.wait_to_read()
    np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3) * 2 + 1)  # the same bytes
    del t
    np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3) * 2 + 1)  # the array keeps them alive
    for _ in range(3):
        tide.ones([2]).__dlpack__()  # a capsule no consumer takes frees its tensor
    copied = np.from_dlpack(tide.ones([3], dtype="i32"))
    assert copied.dtype == np.int32 and list(copied) == [1, 1, 1]
    back = tide.from_dlpack(np.arange(4, dtype=np.float32)[::-1])  # a strided source: copied in order
    np.testing.assert_array_equal(back.numpy(), [3, 2, 1, 0])
    with pytest.raises(tide.DTypeError):
        tide.from_dlpack(np.arange(3, dtype=np.int16))


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    t = tide.arange(4) + 1
    pt = torch.from_dlpack(t)
    assert pt.tolist() == [1.0, 2.0, 3.0, 4.0] and pt.dtype == torch.float32
    back = tide.from_dlpack(torch.arange(3, dtype=torch.float64))
    assert back.dtype == "f64" and back.numpy().tolist() == [0.0, 1.0, 2.0]
