# The two commands a newcomer needs: `make run` and `make test`.
BUILD ?= build
PY := /usr/bin/python3
JOBS ?= $(shell nproc)

.PHONY: setup build run test bench clean

setup:
	@scripts/setup

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DZL_PYTHON=$(PY)

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/zerolayer ablate ablations/quick.ini

test: build
	cd $(BUILD) && ctest --output-on-failure -j 1

bench: build
	$(PY) python/bench_train.py --zerolayer $(BUILD)/zerolayer
	OPENBLAS_NUM_THREADS=1 $(PY) python/bench_fused.py --zerolayer $(BUILD)/zerolayer
	OPENBLAS_NUM_THREADS=1 $(BUILD)/zl_bench

clean:
	rm -rf $(BUILD)
