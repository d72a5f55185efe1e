# Boot images: `make image [board=NAME]` builds out/<board>/ from the board's
# folder; `make run` boots it in QEMU on this terminal. Each artifact is a
# file target with its real inputs, so a second `make image` does nothing.
board ?= qemu-x86_64
# IMAGE_OUT=DIR builds the image in DIR instead (the tests build theirs
# apart, never in the user's out/<board>).
B     := $(or $(IMAGE_OUT),$(OUT)/$(board))
BCONF := board/$(board)/board.conf
BARCH  = $(shell . ./$(BCONF) && echo $$ARCH)
# Reproducible builds: every timestamp is this one (the last commit's time
# unless given).
# Given to the image scripts only: exported, it would reach every other
# target (and our mkfs gives every inode that time when it is set).
EPOCH := $(or $(SOURCE_DATE_EPOCH),$(shell git log -1 --format=%ct 2>/dev/null),0)
IMGENV = SOURCE_DATE_EPOCH=$(EPOCH) ROOTFS_DIR='$(ROOTFS_DIR)' \
         ROOTFS_OVERLAY='$(ROOTFS_OVERLAY)' KILN_VERSION=$(KILN_VERSION) \
         KILN_PUBKEY=$(KILN_KEYS)/bundle.pub

# The board's boot chain (see the disk's rules below) and whether it is an
# A/B board that takes signed updates (BOOTSTATE_PART in board.conf).
BCHAIN := $(shell . ./$(BCONF) 2>/dev/null && echo $$BOOT_CHAIN)
BDISK  := $(if $(filter rpi,$(BCHAIN)),sdcard.img,disk.img)
BAB    := $(shell . ./$(BCONF) 2>/dev/null && echo $$BOOTSTATE_PART)
# Updates: the version written into the root (/etc/kiln/version; a bundle
# installs only over an older one), by default the epoch's UTC time as
# YEAR.MONTHDAY.HOURMINSEC; the signing keys (make keys) in KILN_KEYS.
KILN_VERSION ?= $(shell date -u -d @$(EPOCH) +%Y.%m%d.%H%M%S)
KILN_KEYS ?= keys

tree_files = $(if $(1),$(shell find $(1) 2>/dev/null))
ROOTFS_INPUTS := $(call tree_files,boot/skel board/$(board)/overlay \
                 $(ROOTFS_OVERLAY) $(ROOTFS_DIR))

.PHONY: image run keys bundle FORCE
# Settings that are not files, kept in files rewritten only when they
# change: what a setting shapes depends on its file, so changing it (or
# dropping it) rebuilds that, and nothing else.
settings_file = @mkdir -p $(dir $@); echo '$(1)' | cmp -s - $@ || echo '$(1)' > $@
$(B)/epoch: FORCE
	$(call settings_file,$(EPOCH))
$(B)/rootfs.vars: FORCE
	$(call settings_file,ROOTFS_DIR=$(ROOTFS_DIR) ROOTFS_OVERLAY=$(ROOTFS_OVERLAY) KILN_VERSION=$(KILN_VERSION))
image: $(B)/manifest.txt
	@cat $<

$(BCONF):
	@echo "board '$(board)': no $(BCONF)" >&2; exit 1

# KERNEL=debian (default): Debian's kernel package, unpacked. KERNEL=own:
# the kernel `make kernel` built from source with Kiln's fragments.
KERNEL ?= debian
# (kept out of out/<board>/, which a clean image build may remove)
OWNK := $(OUT)/kernel/$(board)
KDIR = $(if $(filter own,$(KERNEL)),$(OWNK),$(B)/kernel)
$(B)/kernel.vars: FORCE
	$(call settings_file,KERNEL=$(KERNEL))

$(B)/kernel/kver: $(BCONF) boot/fetch-kernel.sh | host-deps
	@mkdir -p $(B)
	boot/fetch-kernel.sh $(BCONF) $(B)/kernel

$(B)/firmware/package: $(BCONF) kmod/fetch-firmware.sh | host-deps
	kmod/fetch-firmware.sh $(BCONF) $(B)/firmware

$(B)/busybox: configs/busybox.config boot/build-busybox.sh | host-deps
	boot/build-busybox.sh $(BARCH) $@

$(B)/tools.stamp: $(BCONF) $(wildcard tools/*.mk tools/*/*.[ch] tools/lib/*/*.[ch])
	@$(MAKE) --no-print-directory tools ARCH=$(BARCH)
	@$(MAKE) --no-print-directory tools ARCH=x86_64
	@touch $@

$(B)/rootfs.erofs: $(B)/epoch $(B)/rootfs.vars $(BCONF) boot/mkrootfs.sh $(B)/busybox $(B)/tools.stamp \
		$(ROOTFS_INPUTS) $(if $(BAB),$(KILN_KEYS)/bundle.pub)
	$(IMGENV) boot/mkrootfs.sh $(BCONF) $(B)/busybox $(OUT)/$(BARCH)/bin \
		$(OUT)/x86_64/bin/mkfs.erofs $@

$(B)/initramfs.img: $(B)/epoch $(BCONF) boot/mkinitramfs.sh boot/init \
		kmod/pick-modules.sh kmod/pick-firmware.sh $(B)/busybox $(KDIR)/kver \
		$(B)/kernel.vars $(B)/firmware/package
	$(IMGENV) boot/mkinitramfs.sh $(BCONF) $(B)/busybox $(KDIR) $(B)/firmware $@

# A board's disk: disk.img (GPT, boot/mkdisk.sh; QEMU starts the kernel),
# or with BOOT_CHAIN in board.conf a U-Boot A/B disk (MBR, boot.scr and
# the A/B state on a FAT: boot/mkabdisk.sh): BOOT_CHAIN=rpi, a Raspberry
# Pi's sdcard.img (the GPU firmware and U-Boot on the FAT too), or
# BOOT_CHAIN=uboot, disk.img (U-Boot given to QEMU as its firmware).
ifneq ($(BCHAIN),)
$(B)/uboot/package: $(BCONF) boot/fetch-uboot.sh scripts/debs.sh | host-deps
	boot/fetch-uboot.sh $(BCONF) $(B)/uboot

$(B)/$(BDISK): $(B)/epoch $(BCONF) boot/mkabdisk.sh boot/uboot/boot.cmd \
		$(B)/rootfs.erofs $(B)/initramfs.img $(KDIR)/kver $(B)/kernel.vars \
		$(B)/uboot/package
	$(IMGENV) boot/mkabdisk.sh $(BCONF) $(B)/rootfs.erofs $(KDIR) $(B)/uboot \
		$(B)/initramfs.img $@
else
$(B)/disk.img: $(B)/epoch $(BCONF) boot/mkdisk.sh $(B)/rootfs.erofs
	$(IMGENV) boot/mkdisk.sh $(BCONF) $(B)/rootfs.erofs $@
endif

$(B)/manifest.txt: $(B)/epoch boot/manifest.sh $(B)/$(BDISK) $(B)/initramfs.img \
		$(KDIR)/kver $(B)/kernel.vars
	cp $(KDIR)/vmlinuz $(B)/vmlinuz
	cp $(BCONF) $(B)/board.conf
	$(IMGENV) DISK_IMAGE=$(BDISK) BOOT_CHAIN=$(BCHAIN) boot/manifest.sh $(board) $(B) $(KDIR) > $@.tmp && mv $@.tmp $@

# The disk stays as built (its SHA-256 is in the manifest): QEMU writes to a
# snapshot, dropped at exit. QEMU_OPTS= keeps what the device writes.
QEMU_OPTS ?= -snapshot
run: image
	QEMU_OPTS='$(QEMU_OPTS)' qemu/run.sh $(B)

# A kernel from source (Debian's linux-source-6.12 or KERNEL_SRC) with
# configs/kernel/erofs.config and the board's KERNEL_FRAGMENTS; long: see
# README. `make image KERNEL=own` then boots it.
.PHONY: kernel
kernel: | host-deps
	$(IMGENV) boot/build-kernel.sh $(BCONF) $(OWNK)
$(OWNK)/kver:
	@echo "KERNEL=own: no kernel built yet; run make kernel board=$(board)" >&2; exit 1

# Signed updates (A/B boards). `make keys`: the Ed25519 pair bundles are
# signed with, KILN_KEYS/bundle.key (secret: never in an image, never
# replaced) and bundle.pub (in every root image); made on first use.
KILN_BUNDLE := $(OUT)/x86_64/bin/kiln-bundle
$(KILN_KEYS)/bundle.pub:
	@$(MAKE) --no-print-directory tools ARCH=x86_64
	@mkdir -p $(KILN_KEYS)
	$(KILN_BUNDLE) keygen $(KILN_KEYS)/bundle.key $@
	@echo "kiln: new signing keys in $(KILN_KEYS)/: keep bundle.key secret and backed up"
keys: $(KILN_KEYS)/bundle.pub
	@echo "kiln: bundles are signed with $(KILN_KEYS)/bundle.key"

# `make bundle [board=...] [BUNDLE_DATA=DIR:TARGET]`: an update bundle of
# the board's root image (and DIR's files, to unpack into TARGET under
# the device's /data) as $(B)/bundle.kiln, signed with KILN_KEYS.
bundle: $(B)/rootfs.erofs
	@[ -n "$(BAB)" ] || { echo "board $(board) takes no updates (no BOOTSTATE_PART)" >&2; exit 1; }
	$(IMGENV) boot/mkbundle.sh $(board) $(B)/rootfs.erofs $(KILN_KEYS)/bundle.key \
		$(KILN_BUNDLE) $(B)/bundle.kiln $(BUNDLE_DATA)
