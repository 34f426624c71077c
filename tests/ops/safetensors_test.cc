// save() and load(): every dtype round trips bit for bit; a file written by
// another program loads by name; each malformed field, and each dtype tide
// has no tensors of, is refused with a message naming the file and the field.
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numbers>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

namespace fs = std::filesystem;

class Safetensors : public OpsTest {
 protected:
  void SetUp() override {
    OpsTest::SetUp();
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : test)
      if (c == '/') c = '_';
    dir_ = fs::temp_directory_path() / ("tide-safetensors-test-" + std::to_string(::getpid()) + "-" + test);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    OpsTest::TearDown();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  /// Writes `bytes` to a file of the test's folder; returns its path.
  std::string file_of(const std::string& bytes, const std::string& name = "f.safetensors") const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }

  fs::path dir_;
};

/// A safetensors file: the header's size, the header, the data.
std::string st_bytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

template <typename T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <typename T>
std::vector<T> bits_of(const Tensor& t) {
  return t.to_vector<T>();
}

TEST_P(Safetensors, EveryDtypeRoundTripsBitForBit) {
  const auto f32 = random_values<float>(6, 1);
  const auto f64 = std::vector<double>{std::numbers::pi, -0.0, std::numeric_limits<double>::denorm_min(),
                                       std::numeric_limits<double>::infinity()};
  const auto i32 = std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::min(), -1, 0, 7,
                                             std::numeric_limits<std::int32_t>::max()};
  const std::map<std::string, Tensor> saved{
      {"w", from_vector(f32, Shape{2, 3})},
      {"scalar", from_vector(std::vector<double>{2.5}, Shape{})},
      {"d", from_vector(f64, Shape{2, 1, 2})},
      {"labels", from_vector(i32, Shape{5})},
      {"mask", from_vector(std::vector<bool>{true, false, false, true}, Shape{2, 2})},
      {"empty", Tensor::empty(Shape{0, 3}, DType::f32)},
  };
  const std::map<std::string, std::string> meta{{"step", "12"}, {"note", "caf\xc3\xa9"}};
  save(path("all.safetensors"), saved, meta);
  const SavedTensors back = load(path("all.safetensors"));
  EXPECT_EQ(back.metadata, meta);
  ASSERT_EQ(back.tensors.size(), saved.size());
  for (const auto& [name, t] : saved) {
    const Tensor& u = back.tensors.at(name);
    EXPECT_EQ(u.dtype(), t.dtype()) << name;
    EXPECT_EQ(u.shape(), t.shape()) << name;
    EXPECT_EQ(u.device(), cpu(0)) << name;
  }
  EXPECT_EQ(bits_of<float>(back.tensors.at("w")), f32);
  const auto d = bits_of<double>(back.tensors.at("d"));
  ASSERT_EQ(d.size(), f64.size());
  EXPECT_EQ(std::memcmp(d.data(), f64.data(), d.size() * sizeof(double)), 0) << "bit for bit, -0.0 included";
  EXPECT_EQ(back.tensors.at("scalar").item<double>(), 2.5);
  EXPECT_EQ(bits_of<std::int32_t>(back.tensors.at("labels")), i32);
  EXPECT_EQ(bits_of<bool>(back.tensors.at("mask")), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(load_metadata(path("all.safetensors")), meta);
}

TEST_P(Safetensors, TheFileIsTheSafetensorsLayoutInTheTensorsDtypes) {
  save(path("two.safetensors"),
       {{"a", from_vector(std::vector<float>{1, 2})}, {"b", from_vector(std::vector<std::int32_t>{3})}});
  const std::string bytes = file_text(path("two.safetensors"));
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u) << "the header is padded to a multiple of 8";
  ASSERT_EQ(bytes.size(), 8 + n + 12);
  const std::string header = bytes.substr(8, n);
  EXPECT_NE(header.find(R"("a":{"data_offsets":[0,8],"dtype":"F32","shape":[2]})"), std::string::npos) << header;
  EXPECT_NE(header.find(R"("b":{"data_offsets":[8,12],"dtype":"I32","shape":[1]})"), std::string::npos) << header;
  EXPECT_EQ(header.find("__metadata__"), std::string::npos) << "none given, none written";
  EXPECT_EQ(bytes.substr(8 + n), raw(std::vector<float>{1, 2}) + raw(std::vector<std::int32_t>{3}));
}

TEST_P(Safetensors, AForeignFileLoadsByName) {
  // Bytes in another order than the names, I64 among them, and a header
  // laid out as another writer might (spaces, fields in another order).
  const std::string header =
      R"({"__metadata__": {"format": "pt"},
          "z.bias": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
          "a.weight": {"shape": [1, 2], "dtype": "F64", "data_offsets": [8, 24]},
          "steps": {"dtype": "I64", "shape": [], "data_offsets": [24, 32]},
          "idx": {"dtype": "I32", "shape": [3], "data_offsets": [32, 44]}})";
  const std::string data = raw(std::vector<float>{0.5f, -1.5f}) + raw(std::vector<double>{1e-300, 3.0}) +
                           raw(std::vector<std::int64_t>{-2147483648LL}) + raw(std::vector<std::int32_t>{4, 5, 6});
  const SavedTensors s = load(file_of(st_bytes(header, data)));
  EXPECT_EQ(s.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(s.tensors.at("z.bias").to_vector<float>(), (std::vector<float>{0.5f, -1.5f}));
  EXPECT_EQ(s.tensors.at("a.weight").shape(), (Shape{1, 2}));
  EXPECT_EQ(s.tensors.at("a.weight").to_vector<double>(), (std::vector<double>{1e-300, 3.0}));
  EXPECT_EQ(s.tensors.at("steps").dtype(), DType::i64);
  EXPECT_EQ(s.tensors.at("steps").shape(), Shape{});
  EXPECT_EQ(s.tensors.at("steps").item<std::int64_t>(), std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(s.tensors.at("idx").to_vector<std::int32_t>(), (std::vector<std::int32_t>{4, 5, 6}));
}

TEST_P(Safetensors, DtypesTideHasNoTensorsOfAreRefusedByName) {
  for (const char* dtype : {"BF16", "F16"}) {
    const std::string header = std::string(R"({"ok":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)") +
                               R"("emb":{"dtype":")" + dtype + R"(","shape":[2],"data_offsets":[4,8]}})";
    const std::string p = file_of(st_bytes(header, std::string(8, '\0')));
    std::string lower = dtype;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_REJECTED(DTypeError, load(p));
    const std::string why = message_of<DTypeError>([&] { load(p); });
    EXPECT_NE(why.find(p + ": tensor 'emb' is " + dtype + ": tide has no " + lower + " yet"), std::string::npos) << why;
  }
}

TEST_P(Safetensors, I64RoundTripsEveryValue) {
  const std::vector<std::int64_t> v{1, 1LL << 40, std::numeric_limits<std::int64_t>::min(),
                                    std::numeric_limits<std::int64_t>::max()};
  const std::string p = file_of(st_bytes(R"({"n":{"dtype":"I64","shape":[4],"data_offsets":[0,32]}})", raw(v)));
  const Tensor n = load(p).tensors.at("n");
  EXPECT_EQ(n.dtype(), DType::i64);
  EXPECT_EQ(n.to_vector<std::int64_t>(), v);
  const std::string q = p + ".again";
  save(q, {{"n", n}});
  EXPECT_EQ(load(q).tensors.at("n").to_vector<std::int64_t>(), v);
}

TEST_P(Safetensors, EachMalformedFieldIsRefusedNamingIt) {
  const std::string f8 = std::string(8, '\0');
  const std::string one = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"12345", "too short for the 8-byte header size"},
      {st_bytes("{}", "").substr(0, 8) + "{", "the header size is 2 bytes, past the end of the file (9 bytes)"},
      {std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}", "more than the limit of 100000000 bytes"},
      {st_bytes("{\"a\":", ""), "the header is not valid JSON"},
      {st_bytes("[1, 2]", ""), "the header is array, not a JSON object"},
      {st_bytes(R"({"a":[]})", ""), "tensor 'a' is array, not an object"},
      {st_bytes(R"({"a":{"dtype":"F32","shape":[2]}})", f8), "tensor 'a' has no 'data_offsets'"},
      {st_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", f8), "tensor 'a' has the field 'x'"},
      {st_bytes(R"({"a":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})", f8), "tensor 'a': its dtype is 7, not a string"},
      {st_bytes(R"({"a":{"dtype":"F31","shape":[2],"data_offsets":[0,8]}})", f8), "the dtype 'F31', which is no safetensors dtype"},
      {st_bytes(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f8), "extent 0 of its shape is -2"},
      {st_bytes(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", f8), "extent 0 of its shape is 2.0"},
      {st_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", f8), "its data_offsets are [0], not [begin, end]"},
      {st_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", f8), "end before they begin"},
      {st_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f8), "its shape [3] of F32 needs 12 bytes, its data_offsets [0,8] hold 8 bytes"},
      {st_bytes(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", f8), "needs more than 2^64 bytes"},
      {st_bytes("{" + one + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f8), "tensor 'b' begins at byte 4, inside tensor 'a' (bytes 0 to 8): their data_offsets overlap"},
      {st_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f8), "bytes 0 to 4 of the data belong to no tensor (a gap before tensor 'a')"},
      {st_bytes("{" + one + "}", f8.substr(0, 6)), "tensor 'a' ends at byte 8, past the end of the data (6 bytes after the header): the file is truncated"},
      {st_bytes("{" + one + "}", f8 + "junk"), "4 bytes after the last tensor's data belong to no tensor"},
      {st_bytes(R"({"__metadata__":{"step":3}})", ""), "__metadata__['step'] is 3, not a string"},
      {st_bytes(R"({"__metadata__":["a"]})", ""), "__metadata__ is array, not an object of strings"},
      {st_bytes("{" + one + "," + one + "}", f8), "the header names 'a' twice"},
      {st_bytes(R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f8), "names 'dtype' twice in one entry"},
      {st_bytes(R"({"a":{"dtype":"F32","shape":[[[2]]],"data_offsets":[0,8]}})", f8), "nests deeper than a safetensors header"},
      {st_bytes(R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f8), "a tensor has an empty name"},
      {st_bytes("{\"a\xff\":1}", ""), "the header is not valid JSON"},
  };
  for (const auto& [bytes, want] : cases) {
    const std::string p = file_of(bytes);
    EXPECT_REJECTED(FileError, load(p));
    const std::string why = message_of<FileError>([&] { load(p); });
    EXPECT_NE(why.find("tide::load: " + p + ": "), std::string::npos) << why;
    EXPECT_NE(why.find(want), std::string::npos) << "expected: " << want << "\ngot: " << why;
    EXPECT_THROW(load_metadata(p), FileError) << want;
  }
  const std::string seven = file_of(st_bytes(R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1],"data_offsets":[0,4]}})",
                                             f8.substr(0, 4)));
  EXPECT_NE(message_of<ShapeError>([&] { load(seven); }).find("tensor 'a' has 7 dimensions; tide's tensors have at most 6"),
            std::string::npos);
}

TEST_P(Safetensors, ATruncatedFileIsRefused) {
  save(path("t.safetensors"), {{"w", from_vector(random_values<double>(16, 2), Shape{4, 4})}});
  const std::string whole = file_text(path("t.safetensors"));
  for (std::size_t keep : {whole.size() - 1, whole.size() - 64, std::size_t{12}, std::size_t{3}, std::size_t{0}}) {
    const std::string p = file_of(whole.substr(0, keep), "cut.safetensors");
    const std::string why = message_of<FileError>([&] { load(p); });
    EXPECT_NE(why.find(p), std::string::npos) << keep << ": " << why;
  }
  EXPECT_NE(message_of<FileError>([&] { load(path("none.safetensors")); })
                .find("cannot open " + path("none.safetensors") + ": No such file or directory"),
            std::string::npos);
  EXPECT_NE(message_of<FileError>([&] { load(dir_.string()); }).find("is a directory"), std::string::npos);
}

TEST_P(Safetensors, SaveRefusesBadNamesBeforeWriting) {
  const Tensor t = from_vector(std::vector<float>{1});
  EXPECT_NE(message_of<ValueError>([&] { save(path("x"), {{"", t}}); }).find("a tensor has an empty name"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] { save(path("x"), {{"__metadata__", t}}); }).find("named __metadata__"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] { save(path("x"), {{"u", Tensor()}}); }).find("tensor 'u' is undefined"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] { save(path("x"), {{"w", t}}, {{"k", "\xff"}}); }).find("not UTF-8"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(path("x")));
  EXPECT_TRUE(fs::is_empty(dir_)) << "no temporary file left";
}

TEST_P(Safetensors, SaveReplacesAFileAtomicallyAndLeavesNoTemporary) {
  save(path("m.safetensors"), {{"w", from_vector(std::vector<float>{1, 2})}}, {{"v", "1"}});
  save(path("m.safetensors"), {{"w", from_vector(std::vector<float>{3})}}, {{"v", "2"}});
  EXPECT_EQ(load(path("m.safetensors")).tensors.at("w").to_vector<float>(), std::vector<float>{3});
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1) << "only the file itself";
  // A folder that does not exist: refused naming the temporary file, and nothing made.
  const std::string missing = path("no/such/dir/m.safetensors");
  const std::string why = message_of<FileError>([&] { save(missing, {{"w", from_vector(std::vector<float>{1})}}); });
  EXPECT_NE(why.find("tide::save: cannot write " + missing + ".tmp."), std::string::npos) << why;
  EXPECT_NE(why.find("No such file or directory"), std::string::npos) << why;
}

TIDE_OPS_TEST_SUITE(Safetensors);

}  // namespace
}  // namespace tide::testing
