// The trainer's data (generated task, IDX reader, sampler) and checkpoints.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "train/checkpoint.h"
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

/// What read_checkpoint(dir) throws ("no error" when it does not).
std::string read_error(const std::string& dir) {
  try {
    read_checkpoint(dir);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Checkpoint, AFileThatIsADirectoryIsNamed) {
  TempDir d;
  const std::string dir = (d.path / "run").string();
  fs::create_directories(checkpoint_path(dir));
  const std::string message = read_error(dir);
  EXPECT_NE(message.find("cannot read the checkpoint " + checkpoint_path(dir) + ": it is a directory, not a file"),
            std::string::npos)
      << message;
}

TEST(Checkpoint, RoundTripsAndRejectsDamage) {
  TempDir d;
  const std::string dir = (d.path / "run").string();
  EXPECT_FALSE(read_checkpoint(dir).has_value());
  CheckpointState s;
  s.fingerprint = "model \"A\"\n\\ \x01";  // what JSON must escape
  s.step = 42;
  s.tensors = {{1.5, -2.25, 1e-300, 4, 5, 6}, {}, {3.0}};
  s.names = {"layer0.weight", "empty", "log.first_step"};
  s.shapes = {{2, 3}, {0}, {1}};
  write_checkpoint(dir, s);
  auto back = read_checkpoint(dir);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->fingerprint, s.fingerprint);
  EXPECT_EQ(back->step, 42);
  EXPECT_EQ(back->tensors, s.tensors);
  EXPECT_EQ(back->names, s.names);
  EXPECT_EQ(back->shapes, s.shapes);
  // Without names and shapes: t0, t1, ... of one dimension.
  CheckpointState plain{"p", 1, {{1, 2}, {3}}, {}, {}};
  write_checkpoint(dir, plain);
  EXPECT_EQ(read_checkpoint(dir)->names, (std::vector<std::string>{"t0", "t1"}));
  EXPECT_EQ(read_checkpoint(dir)->shapes, (std::vector<std::vector<std::int64_t>>{{2}, {1}}));
  // Overwriting leaves one file and no temporaries.
  s.step = 43;
  write_checkpoint(dir, s);
  EXPECT_EQ(read_checkpoint(dir)->step, 43);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1);
  const std::string path = checkpoint_path(dir);
  auto message = [&] { return read_error(dir); };
  // A flipped byte among the values is caught by the checksum.
  const auto size = fs::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - 3));
    f.put('\x7f');
  }
  EXPECT_NE(message().find("checksum mismatch"), std::string::npos) << message();
  // So is a changed digit of the step: the checksum covers the metadata,
  // names and shapes too.
  write_checkpoint(dir, s);
  {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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
  EXPECT_NE(message().find("bad safetensors header"), std::string::npos) << message();
  write_bytes(path, {'n', 'o', 'p', 'e', 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_THROW(read_checkpoint(dir), std::runtime_error);
}

/// A safetensors file of `header` (JSON) and `data_bytes` zero bytes.
void write_forged(const std::string& path, const std::string& header, std::size_t data_bytes = 0,
                  std::uint64_t claimed = 0) {
  const std::uint64_t n = claimed ? claimed : header.size();
  std::string file(reinterpret_cast<const char*>(&n), 8);
  file += header;
  file.append(data_bytes, '\0');
  std::ofstream(path, std::ios::binary) << file;
}

TEST(Checkpoint, ForgedSizesAreRefusedBeforeAnyAllocation) {
  TempDir d;
  const std::string dir = d.path.string(), path = checkpoint_path(dir);
  auto message = [&] { return read_error(dir); };
  const std::string meta =
      R"("__metadata__":{"format":"tide-checkpoint","version":"2","fingerprint":"f","step":"1","fnv1a64":"x"})";
  write_forged(path, "{}", 0, ~std::uint64_t{0});
  EXPECT_NE(message().find("a header of 18446744073709551615 bytes in a file of 10"), std::string::npos) << message();
  write_forged(path, "{" + meta + R"(,"w":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", 8);
  EXPECT_NE(message().find("more values than the file holds"), std::string::npos) << message();
  write_forged(path, "{" + meta + R"(,"w":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", 8);
  EXPECT_NE(message().find("data_offsets outside the file's 8 bytes"), std::string::npos) << message();
  write_forged(path, "{" + meta + R"(,"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  EXPECT_NE(message().find("is F32, not F64"), std::string::npos) << message();
  write_forged(path,
               "{" + meta + R"(,"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)" +
                   R"("b":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
               16);
  EXPECT_NE(message().find("overlap or leave a gap"), std::string::npos) << message();
  write_forged(path, R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8);
  EXPECT_NE(message().find("not a tide checkpoint (no 'format' in its metadata)"), std::string::npos) << message();
  // Values are bounded before they are built: an array of 65, and a header
  // of two million small values (a forged 100 MB one would cost gigabytes).
  std::string dims = "0";
  for (int i = 0; i < 64; ++i) dims += ",1";
  write_forged(path, "{" + meta + R"(,"w":{"dtype":"F64","shape":[)" + dims + R"(],"data_offsets":[0,0]}})");
  EXPECT_NE(message().find("an array of more than 64 items"), std::string::npos) << message();
  std::string many = "{";
  for (int i = 0; i < 2'000'000; ++i) many += (i ? ",\"" : "\"") + std::to_string(i) + "\":0";
  write_forged(path, many + "}");
  EXPECT_NE(message().find("more than 1000000 values"), std::string::npos) << message();
}

// The file is plain safetensors: a reader of the format's own, in Python's
// standard library alone (no tide code), sees the names, shapes, values
// and metadata the trainer wrote.
TEST(Checkpoint, APlainSafetensorsReaderReadsIt) {
  if (std::system("python3 -c 1 > /dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 (scripts/setup.sh installs it)";
  TempDir d;
  const std::string dir = d.path.string();
  CheckpointState s;
  s.fingerprint = "hidden 4; batch 2";
  s.step = 7;
  s.tensors = {{0.5, -1.25, 2, 3, 4, 5, 6, 7}, {0.125, 0.25}, {9}};
  s.names = {"layer0.weight", "layer0.bias", "log.first_step"};
  s.shapes = {{2, 4}, {2}, {1}};
  write_checkpoint(dir, s);
  const std::string out = (d.path / "read.txt").string();
  const std::string cmd =
      "python3 " TIDE_SOURCE_DIR "/tests/train/read_safetensors.py " + checkpoint_path(dir) + " > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(got.find("meta fingerprint hidden 4; batch 2\n"), std::string::npos) << got;
  EXPECT_NE(got.find("meta step 7\n"), std::string::npos) << got;
  EXPECT_NE(got.find("tensor layer0.weight F64 2x4 8 26.25 0.5 7.0\n"), std::string::npos) << got;
  EXPECT_NE(got.find("tensor layer0.bias F64 2 2 0.375 0.125 0.25\n"), std::string::npos) << got;
  EXPECT_NE(got.find("tensor log.first_step F64 1 1 9.0 9.0 9.0\n"), std::string::npos) << got;
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
