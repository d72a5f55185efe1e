# Kiln: boot images for embedded Linux.
#   make image [board=qemu-x86_64]     a bootable image in out/<board>/
#   make run [board=...]               boot it in QEMU on this terminal
#   make tools [ARCH=x86_64|aarch64]   static mkfs.erofs in out/<arch>/bin
#   make test                          unit + integration tests (as root)
#   make clean
ARCH ?= x86_64
OUT  := out
.DEFAULT_GOAL := image

include tools/tools.mk
include tests/tests.mk
include boot/boot.mk

.PHONY: host-deps clean
host-deps:
	@scripts/install-host-deps.sh

clean:
	rm -rf $(OUT)

.PHONY: bench bench-mkfs bench-fsck bench-boot
# Benchmarks (slow, by hand): ANCHOR_MKFS=PATH / ANCHOR_FSCK=PATH add another
# mkfs.erofs / fsck.erofs to the tables.
bench: bench-mkfs bench-fsck bench-boot
bench-mkfs: tools
	@scripts/install-host-deps.sh bench
	@bench/run.sh
bench-fsck: tools
	@scripts/install-host-deps.sh bench
	@bench/fsck.sh
bench-boot: image
	@scripts/install-host-deps.sh bench
	@bench/boot.sh
