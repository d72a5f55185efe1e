# Kiln: boot images for embedded Linux.
#   make image [board=qemu-x86_64]     a bootable image in out/<board>/
#   make run [board=...]               boot it in QEMU on this terminal
#   make tools [ARCH=x86_64|aarch64]   static mkfs.erofs in out/<arch>/bin
#   make test                          unit + integration tests (as root)
#   make kconfig-check [KERNEL_SRC=DIR] do configs/kernel/ fragments hold?
#   make clean
ARCH ?= x86_64
OUT  := out
.DEFAULT_GOAL := image

include tools/tools.mk
include tests/tests.mk
include boot/boot.mk

.PHONY: host-deps clean kconfig-check
host-deps:
	@scripts/install-host-deps.sh

clean:
	rm -rf $(OUT)

.PHONY: bench bench-mkfs bench-fsck bench-boot bench-ota
# Benchmarks (slow, by hand): ANCHOR_MKFS=PATH / ANCHOR_FSCK=PATH add another
# mkfs.erofs / fsck.erofs to the tables. bench-ota (root, loop devices):
# kiln-update unpacking a many-small-files payload onto ext4, per mount
# option and sync strategy (bench/ota.sh says which knobs it takes).
bench: bench-mkfs bench-fsck bench-boot bench-ota
bench-mkfs: tools
	@scripts/install-host-deps.sh bench
	@bench/run.sh
bench-fsck: tools
	@scripts/install-host-deps.sh bench
	@bench/fsck.sh
bench-boot: image
	@scripts/install-host-deps.sh bench
	@bench/boot.sh
bench-ota: tools
	@scripts/install-host-deps.sh bench
	@bench/ota.sh

# Kernel config fragments merged into x86_64 and arm64 defconfigs of
# KERNEL_SRC (default: Debian's linux-source-6.12): every symbol must hold;
# then each board's own KERNEL_FRAGMENTS on its architecture.
kconfig-check: | host-deps
	@scripts/kconfig-check.sh x86_64 configs/kernel/erofs.config configs/kernel/qat.config
	@scripts/kconfig-check.sh arm64 configs/kernel/erofs.config
	@for c in board/*/board.conf; do \
	  frags=$$(. ./$$c && echo $$KERNEL_FRAGMENTS); [ -n "$$frags" ] || continue; \
	  arch=$$(. ./$$c && echo $$ARCH | sed 's/aarch64/arm64/'); \
	  echo "board $$(basename $$(dirname $$c)):"; \
	  scripts/kconfig-check.sh $$arch configs/kernel/erofs.config $$frags || exit 1; \
	done
