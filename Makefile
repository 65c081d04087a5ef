# The two commands a newcomer needs: `make run` and `make test`.
BUILD ?= build
PY := /usr/bin/python3
JOBS ?= $(shell nproc)

.PHONY: setup setup-run build run test test-fast sanitize fuzz bench clean

setup:
	@scripts/setup

# What `make run` needs and no more (scripts/setup's run list): a bare machine's install is minutes shorter.
setup-run:
	@scripts/setup run

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DZL_PYTHON=$(PY)

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Builds only what it runs (the executable, not the tests, benchmarks or the Python module).
run: setup-run $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target zerolayer
	$(BUILD)/zerolayer ablate ablations/quick.ini

# Every test: the C++ binary and one entry per Python test file, $(JOBS) at a time
# (CMakeLists.txt's test section). `ctest -L python`, `-R python_test_study`, `-LE slow` pick a part.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The quick loop: the C++ tests and the Python tests not marked slow (a couple of minutes); no
# CTest fixtures, so the shared studies the fast tests read are built by them, and reused while the
# binary is the same.
test-fast: build
	cd $(BUILD) && PYTEST_ADDOPTS="-m 'not slow'" ctest --output-on-failure -j $(JOBS) -LE 'slow|study' -FS .

# The C++ tests built with AddressSanitizer and UndefinedBehaviorSanitizer, in
# a build folder of their own; any finding fails (UBSan does not recover).
# The SentencePiece tests cannot run there: the module must be loaded with
# RTLD_DEEPBIND to keep its protobuf apart from LibTorch's, and the
# sanitizers' runtime refuses RTLD_DEEPBIND (without it protobuf aborts).
SAN_BUILD ?= build-sanitize
SAN_SKIP := Tokenizer.SentencePiece*:Tokenizer.CorruptOrMissingModelIsNamed:Tokenizer.CachedModelOfAnotherSizeIsAnError
# -O1 -g1 (line tables are all ASan's stack traces need) and asserts on: the
# sanitizers' own advice, and less to compile than -O2 -g.
sanitize: setup
	cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
	  -DZL_SANITIZE=ON -DZL_BUILD_PYTHON=OFF -DZL_PYTHON=$(PY)
	cmake --build $(SAN_BUILD) -j $(JOBS) --target zl_tests
	cd $(SAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ./zl_tests --gtest_brief=1 --gtest_filter=-$(SAN_SKIP)

# libFuzzer on the parsers of user text (tests/fuzz), FUZZ_SECONDS each, from
# the seed corpora in tests/fuzz/corpus; what they find new stays in
# $(FUZZ_BUILD)/corpus, a crash in $(FUZZ_BUILD)/crash-* (make it a regression test).
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZERS := study_file claims_registry tokenizer results_reader
fuzz: setup
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZL_FUZZ=ON \
	  -DZL_BUILD_TESTS=OFF -DZL_BUILD_PYTHON=OFF -DZL_PYTHON=$(PY)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) $(addprefix --target fuzz_,$(FUZZERS))
	for f in $(FUZZERS); do mkdir -p $(FUZZ_BUILD)/corpus/$$f && \
	  $(FUZZ_BUILD)/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -artifact_prefix=$(FUZZ_BUILD)/ \
	    $(FUZZ_BUILD)/corpus/$$f tests/fuzz/corpus/$$f || exit 1; done

bench: build
	$(PY) python/bench_train.py --zerolayer $(BUILD)/zerolayer
	OPENBLAS_NUM_THREADS=1 $(PY) python/bench_fused.py --zerolayer $(BUILD)/zerolayer
	OPENBLAS_NUM_THREADS=1 $(BUILD)/zl_bench

clean:
	rm -rf $(BUILD)
