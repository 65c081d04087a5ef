#include "datasets/spm_bridge/spm_bridge.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

int fail(const std::string& msg, char* err, size_t err_len) {
  if (err && err_len) {
    std::strncpy(err, msg.c_str(), err_len - 1);
    err[err_len - 1] = 0;
  }
  return 1;
}

class Sentences final : public sentencepiece::SentenceIterator {
 public:
  Sentences(const char* const* s, const size_t* len, size_t n) : s_(s), len_(len), n_(n) { load(); }
  bool done() const override { return i_ >= n_; }
  void Next() override {
    ++i_;
    load();
  }
  const std::string& value() const override { return cur_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void load() {
    if (i_ < n_) cur_.assign(s_[i_], len_[i_]);
  }
  const char* const* s_;
  const size_t* len_;
  size_t n_, i_ = 0;
  std::string cur_;
};

}  // namespace

extern "C" {

int zl_spm_train(const char* const* sentences, const size_t* lengths, size_t count, const char* const* keys,
                 const char* const* values, size_t nargs, char** model, size_t* model_len, char* err, size_t err_len) {
  try {
    std::unordered_map<std::string, std::string> args;
    for (size_t i = 0; i < nargs; ++i) args[keys[i]] = values[i];
    Sentences it(sentences, lengths, count);
    std::string serialized;
    auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &serialized);
    if (!status.ok()) return fail(status.ToString(), err, err_len);
    *model = static_cast<char*>(std::malloc(serialized.size()));
    std::memcpy(*model, serialized.data(), serialized.size());
    *model_len = serialized.size();
    return 0;
  } catch (const std::exception& e) {
    return fail(e.what(), err, err_len);
  }
}

int zl_spm_load(const char* model, size_t model_len, void** handle, char* err, size_t err_len) {
  // Protobuf reports some failures by throwing: caught here, so nothing leaks
  // and no exception crosses this C boundary (found by `make sanitize`).
  try {
    auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
    auto status = sp->LoadFromSerializedProto(absl::string_view(model, model_len));
    if (!status.ok()) return fail(status.ToString(), err, err_len);
    *handle = sp.release();
    return 0;
  } catch (const std::exception& e) {
    return fail(e.what(), err, err_len);
  }
}

int zl_spm_encode(void* handle, const char* text, size_t len, int32_t** ids, size_t* count, char* err, size_t err_len) {
  std::vector<int> pieces;
  auto status = static_cast<sentencepiece::SentencePieceProcessor*>(handle)->Encode(absl::string_view(text, len), &pieces);
  if (!status.ok()) return fail(status.ToString(), err, err_len);
  *ids = static_cast<int32_t*>(std::malloc(sizeof(int32_t) * (pieces.size() + 1)));
  for (size_t i = 0; i < pieces.size(); ++i) (*ids)[i] = pieces[i];
  *count = pieces.size();
  return 0;
}

int zl_spm_piece_size(void* handle) { return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->GetPieceSize(); }

int zl_spm_eos_id(void* handle) { return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->eos_id(); }

const char* zl_spm_piece(void* handle, int id, int* kind) {
  auto* sp = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
  *kind = sp->IsByte(id) ? 1 : sp->IsControl(id) ? 2 : sp->IsUnknown(id) ? 3 : 0;
  return sp->IdToPiece(id).c_str();
}

void zl_spm_release(void* handle) { delete static_cast<sentencepiece::SentencePieceProcessor*>(handle); }

void zl_spm_free(void* buffer) { std::free(buffer); }
}
