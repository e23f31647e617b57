# make build | make test | make demo  (README.md)
# The interpreter kbv embeds (and whose torch it links): a cached venv here, the image's python3
# on the H200 machine (make ... PYTHON=python3, or KBV_PYTHON=...).
ifeq ($(origin PYTHON), undefined)
PYTHON := $(shell scripts/python-env.sh)
endif
BUILD ?= build
SANITIZE_BUILD ?= build-sanitize
JOBS ?= $(shell nproc)
DEVICE ?= $(shell $(PYTHON) -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")' 2>/dev/null || echo cpu)

.PHONY: build test test-sanitize demo deps test-deps clean

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-test-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -G Ninja -DPython3_EXECUTABLE=$(PYTHON)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build test-deps test-sanitize
	cd $(BUILD) && ctest --output-on-failure

# The core tests (no torch in their process) under AddressSanitizer and UndefinedBehaviorSanitizer.
test-sanitize: deps
	cmake -S . -B $(SANITIZE_BUILD) -G Ninja -DPython3_EXECUTABLE=$(PYTHON) -DKBV_SANITIZE=ON
	cmake --build $(SANITIZE_BUILD) -j $(JOBS) --target kbv_core_tests
	$(SANITIZE_BUILD)/tests/kbv_core_tests --gtest_brief=1

demo: build
	examples/demo.sh $(DEVICE)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD)
