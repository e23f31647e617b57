# make build | make test | make demo  (README.md)
# The interpreter kbv embeds (and whose torch it links): a cached venv here, the image's python3
# on the H200 machine (make ... PYTHON=python3, or KBV_PYTHON=...).
ifeq ($(origin PYTHON), undefined)
PYTHON := $(shell scripts/python-env.sh)
endif
BUILD ?= build
JOBS ?= $(shell nproc)
DEVICE ?= $(shell $(PYTHON) -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")' 2>/dev/null || echo cpu)

.PHONY: build test demo deps test-deps clean

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-test-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -G Ninja -DPython3_EXECUTABLE=$(PYTHON)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build test-deps
	cd $(BUILD) && ctest --output-on-failure

demo: build
	examples/demo.sh $(DEVICE)

clean:
	rm -rf $(BUILD)
