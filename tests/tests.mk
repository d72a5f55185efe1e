# make test: unit tests (built with ASan + UBSan) and integration tests run
# against every build of the tools: static musl x86_64, the sanitizer build,
# and static aarch64 under qemu-aarch64-static.
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_TESTS := $(UNIT_SRCS:tests/unit/%.c=$(OUT)/asan/tests/%)

$(OUT)/asan/tests/%: tests/unit/%.c tests/unit/check.h $(OUT)/asan/lib/libkiln.a
	@mkdir -p $(dir $@)
	$(Q)gcc $(ASAN_FLAGS) -Itools/lib $< $(OUT)/asan/lib/libkiln.a -o $@ $(ASAN_LDFLAGS)

$(OUT)/asan/tests/test_memcpy: tools/musl/memcpy.c

# The fsck fuzz target (libFuzzer, clang): run for a bounded time by
# tests/integration/fsck.sh, `make fuzz FUZZ_TIME=600` for longer.
FUZZ_SRCS := tests/fuzz/fuzz_fsck.c $(LIB_SRCS) tools/fsck/walk.c tools/fsck/nodes.c \
             tools/fsck/extract.c
$(OUT)/fuzz/fuzz_fsck: $(FUZZ_SRCS) $(LIB_HDRS) $(wildcard tools/fsck/*.h)
	@mkdir -p $(dir $@)
	$(Q)clang $(CSTD) $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
		-Itools/lib -Itools/fsck $(FUZZ_SRCS) -o $@ $(DEPLIBS)

.PHONY: test unit-tests tools-all-arches fuzz-target fuzz
fuzz-target: $(OUT)/fuzz/fuzz_fsck
fuzz: fuzz-target tools
	@FUZZ_TIME=$${FUZZ_TIME:-600} ONLY=fuzz_fsck tests/run.sh
unit-tests: $(UNIT_TESTS)
tools-all-arches: deps
	@$(MAKE) --no-print-directory tools ARCH=x86_64
	@$(MAKE) --no-print-directory tools ARCH=aarch64

test: tools-all-arches tools-asan unit-tests fuzz-target
	@tests/run.sh
