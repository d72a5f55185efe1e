# Kiln: boot images for embedded Linux.
#   make tools [ARCH=x86_64|aarch64]   static mkfs.erofs in out/<arch>/bin
#   make test                          unit + integration tests (as root)
#   make clean
ARCH ?= x86_64
OUT  := out
.DEFAULT_GOAL := tools

include tools/tools.mk
include tests/tests.mk

.PHONY: host-deps clean
host-deps:
	@scripts/install-host-deps.sh

clean:
	rm -rf $(OUT)

.PHONY: bench
# Benchmarks (slow, by hand): ANCHOR_MKFS=PATH adds another mkfs.erofs.
bench: tools
	@scripts/install-host-deps.sh bench
	@bench/run.sh
