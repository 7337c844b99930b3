// The MPIX_* settings have one source of truth, the table in src/config.cc:
// what runs with nothing set is the table's default, a malformed value is
// reported and falls back to it, and README.md's table says the same.
#include <gtest/gtest.h>

#include <cstring>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "src/config.h"

namespace {

// Every field, so that two Configs compare whole.
std::vector<long> fields(const mpix::Config &c) {
  return {c.verbose,         c.intercept_all,   static_cast<long>(c.transport),         c.eager_limit,       c.landing_slots,
          c.unexpected_limit, c.progress_thread, c.stream_queue_depth, c.stream_host_path, c.gpu,               c.gpu_force_staging,
          c.gpu_eager_limit, c.gpu_chunk,       c.gpu_pipeline,        c.gpu_ipc_cache, c.gpu_pinned_slots,     c.gpu_match_threshold,
          c.device_proxy,    c.device_table,    c.device_keys, c.device_lane_tags,         c.device_channels,   c.device_ring,
          c.device_slot_bytes, c.device_mid_max, c.device_mid_ring, c.device_proxy_queue, c.device_proxy_inline, c.device_proxy_hostmem,
          static_cast<long>(std::hash<std::string>{}(c.ofi_provider))};
}

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    const mpix::ConfigVar *v = mpix::config_vars(&n);
    vars_.assign(v, v + n);
    for (const auto &var : vars_) unsetenv(var.name);
  }
  void TearDown() override {
    for (const auto &var : vars_) unsetenv(var.name);
  }
  mpix::Config read(std::string *errors = nullptr) {
    char buf[4096];
    mpix::Config c = mpix::config_from_env(buf, sizeof buf);
    if (errors != nullptr) *errors = buf;
    return c;
  }
  std::vector<mpix::ConfigVar> vars_;
};

TEST_F(ConfigTest, BuiltInDefaultsParse) {
  std::string errors;
  read(&errors);
  EXPECT_EQ(errors, "");
}

// Setting a variable to the default the table documents changes nothing:
// the code runs with exactly what mpix_info and the README print.
TEST_F(ConfigTest, DocumentedDefaultIsWhatRuns) {
  const auto unset = fields(read());
  for (const auto &var : vars_) {
    setenv(var.name, var.default_value, 1);
    std::string errors;
    EXPECT_EQ(fields(read(&errors)), unset) << var.name << "=" << var.default_value;
    EXPECT_EQ(errors, "") << var.name;
    unsetenv(var.name);
  }
}

TEST_F(ConfigTest, MalformedValueIsReportedAndDefaultKept) {
  const auto unset = fields(read());
  for (const auto &var : vars_) {
    setenv(var.name, "not-a-value", 1);
    std::string errors;
    EXPECT_EQ(fields(read(&errors)), unset) << var.name;
    EXPECT_NE(errors.find(std::string(var.name) + "=\"not-a-value\" is invalid"), std::string::npos)
        << var.name << ": " << errors;
    unsetenv(var.name);
  }
}

TEST_F(ConfigTest, ValuesAreRead) {
  setenv("MPIX_EAGER_LIMIT", "123", 1);
  setenv("MPIX_TRANSPORT", "pmpi", 1);
  setenv("MPIX_DEVICE_RING", "100", 1);  // rounded down to a power of two
  const mpix::Config c = read();
  EXPECT_EQ(c.eager_limit, 123);
  EXPECT_EQ(c.transport, mpix::progress::TransportKind::kPmpi);
  EXPECT_EQ(c.device_ring, 64);
}

TEST_F(ConfigTest, OfiTransportAndProvider) {
  setenv("MPIX_TRANSPORT", "ofi", 1);
  setenv("MPIX_OFI_PROVIDER", "tcp;ofi_rxm", 1);
  mpix::Config c = read();
  EXPECT_EQ(c.transport, mpix::progress::TransportKind::kOfi);
  EXPECT_STREQ(c.ofi_provider, "tcp;ofi_rxm");
  // Not a provider name: the default stays, and the error says so.
  setenv("MPIX_OFI_PROVIDER", "tcp ofi_rxm", 1);
  std::string errors;
  c = read(&errors);
  EXPECT_STREQ(c.ofi_provider, "auto");
  EXPECT_NE(errors.find("MPIX_OFI_PROVIDER"), std::string::npos);
}

// MPI_T shows each setting's value in force (ConfigVar::value): with nothing
// set, exactly the default the table documents.
TEST_F(ConfigTest, MpiTValueOfDefaultIsTheDefault) {
  const mpix::Config c = read();
  for (const auto &var : vars_) {
    ASSERT_NE(var.value, nullptr) << var.name;
    const mpix::ConfigValue v = var.value(c);
    EXPECT_EQ(v.is_word ? std::string(v.word) : std::to_string(v.number), var.default_value) << var.name;
  }
}

// Each row reads its own field (one row per setting): a value set through
// a row changes what that row shows and no other row's value; garbage is
// refused by every row, with the row's expectation to say why.
TEST_F(ConfigTest, EachRowOwnsItsField) {
  const mpix::Config base = read();
  for (const auto &var : vars_) {
    ASSERT_NE(var.parse, nullptr) << var.name;
    ASSERT_NE(var.expect, nullptr) << var.name;
    EXPECT_GT(std::strlen(var.expect), 0u) << var.name;
    mpix::Config c = base;
    EXPECT_FALSE(var.parse(c, "not-a-value!")) << var.name;
    ASSERT_TRUE(var.parse(c, var.default_value)) << var.name;
    // Some value other than the default, where one of these is valid.
    int changed = 0;
    for (const char *candidate : {"0", "1", "2", "128", "4096", "65536", "on", "off", "all", "host", "proxy", "defer",
                                  "staging", "ucx", "tcp"}) {
      mpix::Config d = base;
      if (!var.parse(d, candidate)) continue;
      const mpix::ConfigValue mine = var.value(d), before = var.value(base);
      if (mine.is_word ? std::strcmp(mine.word, before.word) == 0 : mine.number == before.number) continue;
      ++changed;
      for (const auto &other : vars_) {
        if (&other == &var) continue;
        const mpix::ConfigValue a = other.value(base), b = other.value(d);
        EXPECT_EQ(a.is_word, b.is_word) << var.name << "=" << candidate << " changed " << other.name;
        if (a.is_word) EXPECT_STREQ(a.word, b.word) << var.name << "=" << candidate << " changed " << other.name;
        else EXPECT_EQ(a.number, b.number) << var.name << "=" << candidate << " changed " << other.name;
      }
    }
    EXPECT_GT(changed, 0) << var.name << ": no other value tried";
  }
}

TEST_F(ConfigTest, MpiTValueFollowsTheEnvironment) {
  setenv("MPIX_EAGER_LIMIT", "4096", 1);
  setenv("MPIX_GPU", "0", 1);  // an alias reads as the word it selects
  setenv("MPIX_TRANSPORT", "ucx", 1);
  setenv("MPIX_DEVICE_RING", "100", 1);  // what runs: rounded down
  const mpix::Config c = read();
  std::map<std::string, mpix::ConfigValue> v;
  for (const auto &var : vars_) v[var.name] = var.value(c);
  EXPECT_EQ(v["MPIX_EAGER_LIMIT"].number, 4096);
  EXPECT_STREQ(v["MPIX_GPU"].word, "off");
  EXPECT_STREQ(v["MPIX_TRANSPORT"].word, "ucx");
  EXPECT_EQ(v["MPIX_DEVICE_RING"].number, 64);
}

// README.md's "Environment variables" table: rows "| `A`, `B` | a, b | ...".
std::map<std::string, std::string> readme_defaults(std::string *problem) {
  std::ifstream in(MPIX_SRCDIR "/README.md");
  std::map<std::string, std::string> out;
  if (!in) {
    *problem = "cannot read " MPIX_SRCDIR "/README.md";
    return out;
  }
  auto split = [](const std::string &s) {
    std::vector<std::string> parts;
    std::stringstream ss(s);
    for (std::string p; std::getline(ss, p, ',');) {
      const auto b = p.find_first_not_of(" `"), e = p.find_last_not_of(" `");
      parts.push_back(b == std::string::npos ? "" : p.substr(b, e - b + 1));
    }
    return parts;
  };
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `MPIX_", 0) != 0) continue;
    const auto c1 = line.find(" | "), c2 = line.find(" | ", c1 + 3);
    if (c2 == std::string::npos) continue;
    const auto names = split(line.substr(2, c1 - 2)), defaults = split(line.substr(c1 + 3, c2 - c1 - 3));
    for (std::size_t i = 0; i < names.size(); ++i)
      out[names[i]] = defaults.size() == names.size() ? defaults[i] : "(row has " + line.substr(c1 + 3, c2 - c1 - 3) + ")";
  }
  return out;
}

TEST_F(ConfigTest, ReadmeTableMatches) {
  std::string problem;
  auto readme = readme_defaults(&problem);
  ASSERT_EQ(problem, "");
  for (const auto &var : vars_) {
    auto it = readme.find(var.name);
    if (it == readme.end()) {
      ADD_FAILURE() << var.name << " is missing from README.md's table";
      continue;
    }
    EXPECT_EQ(it->second, var.default_value) << var.name << " in README.md";
    readme.erase(it);
  }
  readme.erase("MPIX_UCX_*");  // passed to UCX, not one of mpix's settings
  for (const auto &extra : readme) ADD_FAILURE() << "README.md documents " << extra.first << ", which mpix does not read";
}

}  // namespace
