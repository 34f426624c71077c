// The trainer's data (generated task, IDX reader, sampler) and checkpoints.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include <tide/tide.h>

#include "train/checkpoint.h"
#include "train/checkpoint_checks.h"
#include "train/data.h"
#include "train/options.h"

namespace tide::train {
namespace {

namespace fs = std::filesystem;

/// A fresh directory under the system temp dir, removed at the end.
struct TempDir {
  TempDir() : path(fs::temp_directory_path() / ("tide-data-test-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

TEST(Generated, IsDeterministicAndBalanced) {
  Split a = make_generated(3000, 500, 8, 5, 42), b = make_generated(3000, 500, 8, 5, 42);
  EXPECT_EQ(a.train.x, b.train.x);
  EXPECT_EQ(a.test.y, b.test.y);
  Split c = make_generated(3000, 500, 8, 5, 43);
  EXPECT_NE(a.train.x, c.train.x) << "the seed must matter";
  EXPECT_NE(a.train.x, std::vector<float>(a.train.x.size(), a.train.x[0]));
  std::vector<int> count(5);
  for (auto y : a.train.y) {
    ASSERT_GE(y, 0);
    ASSERT_LT(y, 5);
    ++count[static_cast<std::size_t>(y)];
  }
  for (int k : count) EXPECT_GT(k, 3000 / 5 / 2) << "every class is well represented";
  EXPECT_THROW(make_generated(0, 1, 1, 2, 1), std::invalid_argument);
}

TEST(Sampler, RanksSplitEveryGlobalBatchOfOneRank) {
  const std::int64_t rows = 1000, global = 40;
  Sampler one(rows, global, 0, 1, 7);
  Sampler r0(rows, global / 2, 0, 2, 7), r1(rows, global / 2, 1, 2, 7);
  EXPECT_EQ(one.steps_per_epoch(), rows / global);
  for (std::int64_t step : {0, 1, 24, 25, 26, 80}) {  // across epoch boundaries
    auto all = one.rows_for(step), a = r0.rows_for(step), b = r1.rows_for(step);
    a.insert(a.end(), b.begin(), b.end());
    EXPECT_EQ(all, a) << "step " << step;
  }
  // An epoch visits distinct rows, and the next epoch is shuffled differently.
  std::set<std::int64_t> seen;
  for (std::int64_t s = 0; s < one.steps_per_epoch(); ++s)
    for (auto r : one.rows_for(s)) EXPECT_TRUE(seen.insert(r).second) << "row " << r << " twice in an epoch";
  EXPECT_NE(one.rows_for(0), one.rows_for(one.steps_per_epoch()));
  EXPECT_THROW(Sampler(10, 20, 0, 1, 1), std::invalid_argument);
}

void write_bytes(const fs::path& p, const std::vector<unsigned char>& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// A 2-image, 2x3-pixel IDX pair.
void write_tiny_mnist(const fs::path& dir, const std::string& stem) {
  write_bytes(dir / (stem + "-images-idx3-ubyte"),
              {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 0, 255, 10, 20, 30, 40, 1, 2, 3, 4, 5, 6});
  write_bytes(dir / (stem + "-labels-idx1-ubyte"), {0, 0, 8, 1, 0, 0, 0, 2, 7, 3});
}

TEST(Mnist, ReadsIdxFiles) {
  TempDir d;
  write_tiny_mnist(d.path, "train");
  write_tiny_mnist(d.path, "t10k");
  Split s = load_mnist(d.path.string());
  EXPECT_EQ(s.train.rows, 2);
  EXPECT_EQ(s.train.features, 6);
  EXPECT_EQ(s.train.y, (std::vector<std::int32_t>{7, 3}));
  EXPECT_NEAR(s.train.x[0], (0 - 0.1307) / 0.3081, 1e-6);
  EXPECT_NEAR(s.train.x[1], (1 - 0.1307) / 0.3081, 1e-6);
  EXPECT_EQ(s.test.rows, 2);
}

/// What loading the MNIST files of `d` throws, or "no error".
std::string load_error(const TempDir& d) {
  try {
    load_mnist(d.path.string());
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Mnist, BadFilesAreNamed) {
  TempDir d;
  auto message = [&] { return load_error(d); };
  EXPECT_NE(message().find("cannot open"), std::string::npos);
  write_tiny_mnist(d.path, "train");
  write_tiny_mnist(d.path, "t10k");
  write_bytes(d.path / "t10k-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 3, 7, 3});
  EXPECT_NE(message().find("header promises 3 bytes"), std::string::npos) << message();
  write_bytes(d.path / "t10k-labels-idx1-ubyte", {0x1f, 0x8b, 8, 0});
  EXPECT_NE(message().find("gzip"), std::string::npos) << message();
  write_bytes(d.path / "t10k-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 3, 7, 3, 1});
  EXPECT_NE(message().find("disagree"), std::string::npos) << message();
  EXPECT_NE(message().find("t10k-images-idx3-ubyte holds 2 images"), std::string::npos) << message();
  EXPECT_NE(message().find("t10k-labels-idx1-ubyte 3 labels"), std::string::npos) << message();
}

TEST(Mnist, MisshapenFilesAreNamedWithWhatIsWrong) {
  TempDir d;
  auto message = [&] { return load_error(d); };
  const std::string images = (d.path / "train-images-idx3-ubyte").string();
  const std::string labels = (d.path / "train-labels-idx1-ubyte").string();
  write_tiny_mnist(d.path, "train");
  write_tiny_mnist(d.path, "t10k");
  // 2 images of 6 pixels as a 2-D file: its count matches the labels.
  write_bytes(images, {0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 6, 0, 255, 10, 20, 30, 40, 1, 2, 3, 4, 5, 6});
  EXPECT_NE(message().find(images + ": expected images x rows x columns (3 dimensions), the file has 2 (2 x 6)"),
            std::string::npos)
      << message();
  write_bytes(images, {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_NE(message().find(images + ": images of 0 x 0 pixels"), std::string::npos) << message();
  write_tiny_mnist(d.path, "train");
  write_bytes(labels, {0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 1, 7, 3});
  EXPECT_NE(message().find(labels + ": expected one label per image (1 dimension), the file has 2 (2 x 1)"),
            std::string::npos)
      << message();
  fs::remove(labels);
  fs::create_directory(labels);
  EXPECT_NE(message().find(labels + " is a directory, expected an IDX file"), std::string::npos) << message();
}

TEST(Mnist, TestImagesOfAnotherSizeAreNamed) {
  TempDir d;
  write_tiny_mnist(d.path, "train");  // 2 x 3 pixels
  write_tiny_mnist(d.path, "t10k");
  write_bytes(d.path / "t10k-images-idx3-ubyte", {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 9, 8, 7, 6});
  const std::string message = load_error(d);
  EXPECT_NE(message.find("the test images have 2 pixels each, the training images 6"), std::string::npos) << message;
}

TEST(Mnist, TheSameDataHasTheSameDigestWhateverItsPath) {
  TempDir d;
  write_tiny_mnist(d.path, "train");
  write_tiny_mnist(d.path, "t10k");
  const std::string a = content_digest(load_mnist(d.path.string()).train);
  EXPECT_EQ(a, content_digest(load_mnist(d.path.string() + "/").train));
  EXPECT_EQ(a, content_digest(load_mnist((d.path / "." / "").string()).train));
  write_bytes(d.path / "train-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 2, 7, 4});
  EXPECT_NE(a, content_digest(load_mnist(d.path.string()).train)) << "one label changed";
}

TEST(Widths, AreWholeNumbersAtLeastOneWithNothingEmpty) {
  EXPECT_EQ(parse_widths("512,256"), (std::vector<std::int64_t>{512, 256}));
  EXPECT_EQ(parse_widths("64"), (std::vector<std::int64_t>{64}));
  auto message = [](const std::string& text) {
    try {
      parse_widths(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("64,,32").find("'64,,32': width 2 is empty"), std::string::npos) << message("64,,32");
  EXPECT_NE(message(",64").find("width 1 is empty"), std::string::npos);
  EXPECT_NE(message("64,").find("width 2 is empty"), std::string::npos);
  EXPECT_NE(message("").find("no width"), std::string::npos);
  EXPECT_NE(message("64,x").find("width 2 (x) is not a whole number"), std::string::npos);
  EXPECT_NE(message("64, 32").find("is not a whole number"), std::string::npos);
  EXPECT_NE(message("0").find("must be at least 1"), std::string::npos);
  EXPECT_NE(message("-4").find("must be at least 1"), std::string::npos);
  EXPECT_NE(message("99999999999999999999").find("too large"), std::string::npos);
}

/// A current engine for the test's duration: checkpoints are written and
/// read as tensors.
struct WithEngine {
  std::unique_ptr<Engine> engine = Engine::create(EngineOptions{});
  EngineScope scope{*engine};
};

/// What read_checkpoint(dir, keys) throws ("no error" when it does not).
std::string read_error(const std::string& dir, const std::vector<std::string>& keys = {}) {
  try {
    read_checkpoint(dir, keys);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Checkpoint, AFileThatIsADirectoryIsNamed) {
  TempDir d;
  WithEngine e;
  const std::string dir = (d.path / "run").string();
  fs::create_directories(checkpoint_path(dir));
  const std::string message = read_error(dir);
  EXPECT_NE(message.find("cannot read the checkpoint " + checkpoint_path(dir) + ": it is a directory, not a file"),
            std::string::npos)
      << message;
}

/// A checkpoint of a layer's weights (f32) and bias (f64) in the model's
/// file, and a log step in the optimizer's.
CheckpointState small_checkpoint() {
  CheckpointState s;
  s.fingerprint = "model \"A\"\n\\ \x01";  // what JSON must escape
  s.step = 42;
  s.tensors = {{1.5, -2.25, 0.125, 4, 5, 6}, {1e-300, 3}, {}, {3.0}};
  s.names = {"0.weight", "0.bias", "empty", "log.first_step"};
  s.shapes = {{2, 3}, {2}, {0}, {1}};
  s.dtypes = {DType::f32, DType::f64, DType::i32, DType::f64};
  s.model_tensors = 2;
  return s;
}

TEST(Checkpoint, RoundTripsInTwoFilesAndRejectsDamage) {
  TempDir d;
  WithEngine e;
  const std::string dir = (d.path / "run").string();
  CheckpointState s = small_checkpoint();
  EXPECT_FALSE(read_checkpoint(dir, s.names).has_value());
  write_checkpoint(dir, s);
  auto back = read_checkpoint(dir, s.names);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->fingerprint, s.fingerprint);
  EXPECT_EQ(back->step, 42);
  EXPECT_EQ(back->tensors, s.tensors);
  EXPECT_EQ(back->names, s.names);
  EXPECT_EQ(back->shapes, s.shapes);
  EXPECT_EQ(back->dtypes, s.dtypes) << "each tensor in its own dtype";
  EXPECT_EQ(back->model_tensors, 2u);
  const std::string path = checkpoint_path(dir), opt = optimizer_path(dir);
  EXPECT_EQ(load(path).tensors.size(), 2u) << "the model's file holds the model alone";
  EXPECT_EQ(load(opt).tensors.size(), 2u);
  // Keys asked for in another order come in that order; one missing is "".
  back = read_checkpoint(dir, {"log.first_step", "nope", "0.weight"});
  EXPECT_EQ(back->names, (std::vector<std::string>{"log.first_step", "", "0.weight", "0.bias", "empty"}));
  // Overwriting leaves the two files, the optimizer file before them and no
  // temporaries.
  s.step = 43;
  write_checkpoint(dir, s);
  EXPECT_EQ(read_checkpoint(dir, s.names)->step, 43);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 3);
  EXPECT_TRUE(fs::exists(previous_optimizer_path(dir)));
  auto message = [&] { return read_error(dir, s.names); };
  // A flipped byte among the values is caught by the checksum.
  for (const std::string& p : {path, opt}) {
    write_checkpoint(dir, s);
    const auto size = fs::file_size(p);
    {
      std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(size - 3));
      f.put('\x7f');
    }
    EXPECT_NE(message().find(p + ": checksum mismatch"), std::string::npos) << message();
  }
  // So is a changed digit of the step: the checksum covers the metadata,
  // names and shapes too.
  write_checkpoint(dir, s);
  {
    std::string bytes = file_text(path);
    const auto at = bytes.find("\"step\":\"43\"");
    ASSERT_NE(at, std::string::npos);
    bytes[at + 9] = '8';
    std::ofstream(path, std::ios::binary) << bytes;
  }
  EXPECT_NE(message().find("checksum mismatch"), std::string::npos) << message();
  // One in the header breaks its structure.
  write_checkpoint(dir, s);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(9);
    f.put('[');
  }
  EXPECT_NE(message().find("tide::load: " + path + ": the header is not valid JSON"), std::string::npos) << message();
  // Two files of different steps: a write interrupted between them.
  write_checkpoint(dir, s);
  const std::string older = file_text(opt);
  s.step = 44;
  write_checkpoint(dir, s);
  std::ofstream(opt, std::ios::binary) << older;
  EXPECT_NE(message().find(path + " is at step 44 but " + opt + " at step 43"), std::string::npos) << message();
  fs::remove(opt);
  EXPECT_NE(message().find("has no optimizer.safetensors beside it"), std::string::npos) << message();
  // A write killed between the two files (the model of step 45 not yet in
  // place): the model of 44 with the optimizer file kept aside, of 44.
  write_checkpoint(dir, s);
  const std::string model44 = file_text(path);
  s.step = 45;
  write_checkpoint(dir, s);
  std::ofstream(path, std::ios::binary) << model44;
  EXPECT_EQ(read_checkpoint(dir, s.names)->step, 44) << message();
  // Killed after the optimizer file was set aside, before the new one.
  fs::remove(opt);
  EXPECT_EQ(read_checkpoint(dir, s.names)->step, 44) << message();
  // The next write goes on from there.
  write_checkpoint(dir, s);
  EXPECT_EQ(read_checkpoint(dir, s.names)->step, 45);
}

TEST(Checkpoint, AFileNotTidesOrOfTheEarlierVersionIsRefused) {
  TempDir d;
  WithEngine e;
  const std::string dir = d.path.string();
  write_checkpoint(dir, small_checkpoint());
  const Tensor w = from_vector(std::vector<double>{1});
  save(checkpoint_path(dir), {{"0.weight", w}});
  EXPECT_NE(read_error(dir).find("not a tide checkpoint (no 'format' in its metadata)"), std::string::npos)
      << read_error(dir);
  save(checkpoint_path(dir), {{"0.weight", w}},
       {{"format", "tide-checkpoint"}, {"version", "2"}, {"fingerprint", "f"}, {"step", "1"}, {"fnv1a64", "x"}});
  EXPECT_NE(read_error(dir).find("a tide checkpoint of version 2 (one file, every tensor F64), which this trainer "
                                 "does not read"),
            std::string::npos)
      << read_error(dir);
}

// The files are plain safetensors: a reader of the format's own, in
// Python's standard library alone (no tide code), sees the names, dtypes,
// shapes, values and metadata the trainer wrote.
TEST(Checkpoint, APlainSafetensorsReaderReadsIt) {
  if (std::system("python3 -c 1 > /dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 (scripts/setup.sh installs it)";
  TempDir d;
  WithEngine e;
  const std::string dir = d.path.string();
  CheckpointState s;
  s.fingerprint = "hidden 4; batch 2";
  s.step = 7;
  s.tensors = {{0.5, -1.25, 2, 3, 4, 5, 6, 7}, {0.125, 0.25}, {9}, {9}};
  s.names = {"0.weight", "0.bias", "log.correct_counts", "log.first_step"};
  s.shapes = {{2, 4}, {2}, {1}, {1}};
  s.dtypes = {DType::f32, DType::f32, DType::i32, DType::f64};
  s.model_tensors = 2;
  write_checkpoint(dir, s);
  const std::string out = (d.path / "read.txt").string();
  const std::string reader = "python3 " TIDE_SOURCE_DIR "/tests/train/read_safetensors.py ";
  const std::string cmd = reader + checkpoint_path(dir) + " > " + out + " && " + reader + optimizer_path(dir) + " >> " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string got = file_text(out);
  EXPECT_NE(got.find("meta fingerprint hidden 4; batch 2\n"), std::string::npos) << got;
  EXPECT_NE(got.find("meta step 7\n"), std::string::npos) << got;
  EXPECT_NE(got.find("tensor 0.weight F32 2x4 8 26.25 0.5 7.0\n"), std::string::npos) << got;
  EXPECT_NE(got.find("tensor 0.bias F32 2 2 0.375 0.125 0.25\n"), std::string::npos) << got;
  EXPECT_NE(got.find("tensor log.correct_counts I32 1 1 9 9 9\n"), std::string::npos) << got;
  EXPECT_NE(got.find("tensor log.first_step F64 1 1 9.0 9.0 9.0\n"), std::string::npos) << got;
}

TEST(Checkpoint, ResumeWarnsOfWhatChangesAndRefusesWhatCannotContinue) {
  CheckpointState ck;
  ck.fingerprint = "widths=4,2 dtype=f32 opt=sgd lr=0.1 momentum=0.9 global_batch=64 seed=1 data=fnv1a64:ab";
  ck.step = 5;
  ck.names = {"log.loss_sums", "log.correct_counts", "log.first_step"};
  ck.tensors = {{1.5}, {3}, {4}};
  ResumeExpectation want{"ck", ck.fingerprint, {}, {"loss sums", "correct counts", "first step"}, ck.names, 10};
  EXPECT_TRUE(check_resumable(ck, want).warnings.empty()) << "the same run";
  want.fingerprint = "widths=4,2 dtype=f32 opt=sgd lr=0.01 momentum=0.9 global_batch=128 seed=1 data=fnv1a64:ab";
  const ResumeNotes notes = check_resumable(ck, want);
  ASSERT_EQ(notes.warnings.size(), 2u);
  EXPECT_EQ(notes.warnings[0].find("resuming with global_batch 128 where the checkpoint's run had 64: the steps per "
                                   "epoch change, so from step 5 on the data comes in another order"),
            0u)
      << notes.warnings[0];
  EXPECT_EQ(notes.warnings[1], "resuming with lr 0.01 where the checkpoint's run had 0.1: the learning rate changes "
                               "from here on");
  EXPECT_TRUE(notes.restart_log_interval);
  auto refusal = [&](const std::string& fingerprint) {
    want.fingerprint = fingerprint;
    try {
      check_resumable(ck, want);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(refusal("widths=4,3 dtype=f32 opt=sgd lr=0.1 momentum=0.9 global_batch=64 seed=1 data=fnv1a64:ab")
                .find("the checkpoint in ck cannot be continued by this run: the model's layer widths differ, so "
                      "its parameters cannot be loaded (widths 4,2 there, 4,3 here)"),
            std::string::npos);
  EXPECT_NE(refusal("widths=4,2 dtype=f32 opt=sgd lr=0.1 momentum=0.9 global_batch=64 seed=1 data=fnv1a64:cd")
                .find("the training data differ (data fnv1a64:ab there, fnv1a64:cd here)"),
            std::string::npos);
  EXPECT_NE(refusal("widths=4,2 dtype=f32 opt=adam lr=0.1 momentum=0.9 global_batch=64 seed=1 data=fnv1a64:ab")
                .find("the optimizer differs"),
            std::string::npos);
}

TEST(CheckpointDir, IsCreatedAndCheckedWritable) {
  TempDir d;
  const fs::path nested = d.path / "a" / "b";
  EXPECT_EQ(prepare_checkpoint_dir(nested.string()).files, 0);
  EXPECT_TRUE(fs::is_directory(nested));
  EXPECT_EQ(std::distance(fs::directory_iterator(nested), fs::directory_iterator{}), 0) << "the probe is removed";
  write_bytes(d.path / "file", {1});
  auto message = [](const fs::path& p) {
    try {
      prepare_checkpoint_dir(p.string());
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(d.path / "file").find((d.path / "file").string() + " is a file, not a directory"),
            std::string::npos)
      << message(d.path / "file");
  const std::string under_file = message(d.path / "file" / "ck");
  EXPECT_NE(under_file.find("cannot create the checkpoint directory " + (d.path / "file" / "ck").string()),
            std::string::npos)
      << under_file;
}

TEST(CheckpointDir, StaleTemporariesAreRemovedLiveOnesKept) {
  TempDir d;
  const std::string dir = d.path.string();
  const std::string stale = checkpoint_path(dir) + ".tmp.999999999";  // above any pid_max: no such process
  const std::string live = checkpoint_path(dir) + ".tmp.1";           // init: a process that exists
  const std::string mine = checkpoint_path(dir) + ".tmp." + std::to_string(::getpid());
  const std::string other = d.path.string() + "/notes.tmp.5";
  for (const auto& p : {stale, live, mine, other}) write_bytes(p, std::vector<unsigned char>(1000, 7));
  const StaleTemporaries removed = prepare_checkpoint_dir(dir);
  EXPECT_EQ(removed.files, 1);
  EXPECT_EQ(removed.bytes, 1000u);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(mine));
  EXPECT_TRUE(fs::exists(other));
}

TEST(CheckpointDir, TheTemporaryOfAWriterJustKilledIsRemovedAtOnce) {
  // A writer killed moments ago is a zombie until its parent reaps it: it
  // still answers kill(pid, 0), yet it will never finish its file.
  TempDir d;
  const std::string dir = d.path.string();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);  // exited, not reaped
  const std::string zombie = checkpoint_path(dir) + ".tmp." + std::to_string(child);
  write_bytes(zombie, std::vector<unsigned char>(500, 1));
  const StaleTemporaries removed = prepare_checkpoint_dir(dir);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(removed.files, 1);
  EXPECT_FALSE(fs::exists(zombie));
}

}  // namespace
}  // namespace tide::train
