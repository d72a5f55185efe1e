# make test: unit tests (built with ASan + UBSan) and integration tests run
# against every build of the tools: static musl x86_64, the sanitizer build,
# and static aarch64 under qemu-aarch64-static.
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_TESTS := $(UNIT_SRCS:tests/unit/%.c=$(OUT)/asan/tests/%)

$(OUT)/asan/tests/%: tests/unit/%.c tests/unit/check.h $(OUT)/asan/lib/libkiln.a
	@mkdir -p $(dir $@)
	$(Q)gcc $(ASAN_FLAGS) -Itools/lib $< $(OUT)/asan/lib/libkiln.a -o $@ $(ASAN_LDFLAGS)

.PHONY: test unit-tests tools-all-arches
unit-tests: $(UNIT_TESTS)
tools-all-arches: deps
	@$(MAKE) --no-print-directory tools ARCH=x86_64
	@$(MAKE) --no-print-directory tools ARCH=aarch64

test: tools-all-arches tools-asan unit-tests
	@tests/run.sh
