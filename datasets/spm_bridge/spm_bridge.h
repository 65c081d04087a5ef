// A C boundary around SentencePiece. Debian's libsentencepiece embeds its
// own protobuf-lite (3.14) with exported symbols, while LibTorch loads the
// system libprotobuf (3.21): in one symbol scope they bind to each other's
// code and abort at start-up. So SentencePiece lives in its own module,
// libzl_spm.so, loaded with RTLD_LOCAL | RTLD_DEEPBIND, and is reached only
// through these plain C functions (no C++ types cross the boundary).
#pragma once
#include <cstddef>
#include <cstdint>

extern "C" {

// Every call returns 0 on success; on failure, non-zero and a message in err.
int zl_spm_train(const char* const* sentences, const size_t* lengths, size_t count, const char* const* keys,
                 const char* const* values, size_t nargs, char** model, size_t* model_len, char* err, size_t err_len);
int zl_spm_load(const char* model, size_t model_len, void** handle, char* err, size_t err_len);
int zl_spm_encode(void* handle, const char* text, size_t len, int32_t** ids, size_t* count, char* err, size_t err_len);
int zl_spm_piece_size(void* handle);
int zl_spm_eos_id(void* handle);
// The piece's spelling (valid while the handle lives) and kind: 0 normal,
// 1 byte, 2 control, 3 unknown.
const char* zl_spm_piece(void* handle, int id, int* kind);
void zl_spm_release(void* handle);
void zl_spm_free(void* buffer);  // model bytes and id arrays
}
