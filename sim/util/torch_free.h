// Forced into every file of zl_core (CMakeLists.txt: `-include`), the
// library of the sources that use nothing of LibTorch and so compile in a
// second or two instead of the ~10-20 s that <torch/torch.h> or its
// precompiled header costs each file.
//
// zl_core is built without LibTorch's include directories, but Debian puts
// ATen/ and c10/ in /usr/include, where any file finds them. Every LibTorch
// header reaches namespace c10, so poisoning the name makes a LibTorch header
// in zl_core, included directly or through one of our headers, a compile
// error: "attempt to use poisoned "c10"". If the file needs LibTorch, it
// belongs in a torch library: name it in ZL_TORCH_IN_CORE_DIRS (or take it
// off ZL_CORE_IN_TORCH_DIRS) in CMakeLists.txt. If it needs one small thing
// from a torch header, move that into a header of its own instead.
#pragma once
#pragma GCC poison c10 torch
