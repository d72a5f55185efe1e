# make test: unit tests (built with ASan + UBSan) and integration tests.
# Every mkfs/compress/fsck test runs against the static musl x86_64 build
# and the sanitizer build; the static aarch64 build runs under
# qemu-aarch64-static for the tests listed in AARCH64_TESTS (tests/run.sh),
# plus aarch64_same_image (its compressed images equal x86_64's byte for
# byte) and fsck_aarch64.
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_TESTS := $(UNIT_SRCS:tests/unit/%.c=$(OUT)/asan/tests/%)

$(OUT)/asan/tests/%: tests/unit/%.c tests/unit/check.h $(OUT)/asan/lib/libkiln.a
	@mkdir -p $(dir $@)
	$(Q)gcc $(ASAN_FLAGS) -Itools/lib $< $(OUT)/asan/lib/libkiln.a -o $@ $(ASAN_LDFLAGS)

$(OUT)/asan/tests/test_memcpy: tools/musl/memcpy.c

# The fsck fuzz target (libFuzzer, clang): run for a bounded time by
# tests/integration/fsck.sh, `make fuzz FUZZ_TIME=600` for longer.
# fsck reads images: libkiln's writer (and its libarchive) stays out.
FUZZ_SRCS := tests/fuzz/fuzz_fsck.c $(filter-out tools/lib/write/%,$(LIB_SRCS)) \
             $(filter-out tools/fsck/main.c,$(FSCK_SRCS))
$(OUT)/fuzz/fuzz_fsck: $(FUZZ_SRCS) $(LIB_HDRS) $(wildcard tools/fsck/*.h)
	@mkdir -p $(dir $@)
	$(Q)clang $(CSTD) $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
		-Itools/lib -Itools/fsck $(FUZZ_SRCS) -o $@ $(DEPLIBS)

# The tar fuzz target: mkfs.erofs --tar=f, the whole build (fsck.sh runs it).
FUZZ_TAR_SRCS := tests/fuzz/fuzz_tar.c $(LIB_SRCS)
$(OUT)/fuzz/fuzz_tar: $(FUZZ_TAR_SRCS) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(Q)clang $(CSTD) $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
		-Itools/lib $(FUZZ_TAR_SRCS) -o $@ -larchive $(DEPLIBS)

# The bundle fuzz target: kiln-update's reading and unpacking of a bundle
# (tests/integration/ota.sh runs it).
FUZZ_BUNDLE_SRCS := tests/fuzz/fuzz_bundle.c $(OTA_SRCS) $(FULLIO_SRCS)
$(OUT)/fuzz/fuzz_bundle: $(FUZZ_BUNDLE_SRCS) $(wildcard tools/ota/*.h) \
		$(FULLIO_SRCS:.c=.h)
	@mkdir -p $(dir $@)
	$(Q)clang $(CSTD) $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
		-Itools/ota $(FUZZ_BUNDLE_SRCS) -o $@ $(OTA_LIBS)

.PHONY: test unit-tests tools-all-arches fuzz-target fuzz
fuzz-target: $(OUT)/fuzz/fuzz_fsck $(OUT)/fuzz/fuzz_bundle $(OUT)/fuzz/fuzz_tar
fuzz: fuzz-target tools
	@FUZZ_TIME=$${FUZZ_TIME:-600} ONLY='fuzz_*' tests/run.sh
unit-tests: $(UNIT_TESTS)
tools-all-arches: deps
	@$(MAKE) --no-print-directory tools ARCH=x86_64
	@$(MAKE) --no-print-directory tools ARCH=aarch64

test: tools-all-arches tools-asan unit-tests fuzz-target
	@tests/run.sh
