# Kiln's U-Boot boot script for the A/B boards (boot.scr on the FAT,
# compiled by boot/mkabdisk.sh with mkimage -T script; the build puts two
# lines above this: kiln_cmdline, the board's CMDLINE, and kiln_ram, where
# its RAM starts, the board's UBOOT_RAM).
#
# A/B: the state is kept twice on the FAT, state0.env and state1.env, each
# in U-Boot's binary environment format (4096 bytes: a little-endian CRC32
# of bytes 4..4095, then name=value\0 entries), as `env export -c` writes
# and `env import -c` checks. Variables: BOOT_ORDER ("A B"), BOOT_A_LEFT,
# BOOT_B_LEFT (tries left, 0..9) and KILN_SEQ (decimal). The valid copy
# with the higher KILN_SEQ wins (a tie: state0); the first slot in
# BOOT_ORDER with tries left boots (RAUC's U-Boot scheme), its tries go
# down by one, and the state, KILN_SEQ + 1, goes to the OTHER copy: a
# power cut while writing leaves the copy that was read intact. No slot
# with tries left: both reset to 3, the first in BOOT_ORDER boots.
# Linux gets kiln.slot=A|B, root= and kiln.data= (the MBR's PARTUUIDs).
#
# Memory, from kiln_ram: the kernel Image (decompressed there, 2 MiB
# aligned) at 64 MiB, clear of this script at scriptaddr (36 MiB on the
# Pi, 2 MiB on QEMU's virt); the DT, the state buffers and the initramfs
# above it; the compressed kernel at 256 MiB.
test -n "${kiln_ram}" || setenv kiln_ram 0
setexpr kiln_kernel ${kiln_ram} + 0x04000000
setexpr kiln_fdt ${kiln_ram} + 0x08000000
setexpr kiln_st0 ${kiln_ram} + 0x08100000
setexpr kiln_st1 ${kiln_ram} + 0x08110000
setexpr kiln_out ${kiln_ram} + 0x08120000
setexpr kiln_initrd ${kiln_ram} + 0x08200000
setexpr kiln_comp ${kiln_ram} + 0x10000000
# the FAT this script came from (distro boot sets these)
test -n "${devtype}" || setenv devtype mmc
test -n "${devnum}" || setenv devnum 0
test -n "${distro_bootpart}" || setenv distro_bootpart 1
setenv kiln_fat "${devnum}:${distro_bootpart}"

# Both copies, each into kiln_{ok,ord,a,b,seq}N. A copy is valid when it
# is whole (4096 bytes: one cut short would be checked against whatever
# the buffer held past its end), its CRC is right and it has all four
# variables (as kiln-bootstate has it).
setenv kiln_ok0 0
setenv kiln_ok1 0
for kiln_n in 0 1; do
	setenv BOOT_ORDER
	setenv BOOT_A_LEFT
	setenv BOOT_B_LEFT
	setenv KILN_SEQ
	if test ${kiln_n} = 0; then setenv kiln_buf ${kiln_st0}; else setenv kiln_buf ${kiln_st1}; fi
	# (one line: U-Boot's hush continues no line after &&)
	if load ${devtype} ${kiln_fat} ${kiln_buf} state${kiln_n}.env && test "${filesize}" = 1000 && env import -c ${kiln_buf} 0x1000 BOOT_ORDER BOOT_A_LEFT BOOT_B_LEFT KILN_SEQ && test -n "${KILN_SEQ}" && test -n "${BOOT_ORDER}" && test -n "${BOOT_A_LEFT}" && test -n "${BOOT_B_LEFT}"; then
		setenv kiln_ok${kiln_n} 1
		setenv kiln_ord${kiln_n} "${BOOT_ORDER}"
		setenv kiln_a${kiln_n} "${BOOT_A_LEFT}"
		setenv kiln_b${kiln_n} "${BOOT_B_LEFT}"
		setenv kiln_seq${kiln_n} "${KILN_SEQ}"
	else
		echo "kiln: state${kiln_n}.env is missing or invalid"
	fi
done

# The copy to use (kiln_cur) and the one to write (kiln_next).
setenv kiln_cur
if test ${kiln_ok0} = 1 && test ${kiln_ok1} = 1; then
	if test ${kiln_seq1} -gt ${kiln_seq0}; then setenv kiln_cur 1; else setenv kiln_cur 0; fi
elif test ${kiln_ok0} = 1; then
	setenv kiln_cur 0
elif test ${kiln_ok1} = 1; then
	setenv kiln_cur 1
fi
if test -z "${kiln_cur}"; then
	echo "kiln: no valid A/B state: starting over (BOOT_ORDER A B, 3 tries each)"
	setenv BOOT_ORDER "A B"
	setenv BOOT_A_LEFT 3
	setenv BOOT_B_LEFT 3
	setenv KILN_SEQ 0
	setenv kiln_next 0
elif test ${kiln_cur} = 0; then
	setenv BOOT_ORDER "${kiln_ord0}"
	setenv BOOT_A_LEFT "${kiln_a0}"
	setenv BOOT_B_LEFT "${kiln_b0}"
	setenv KILN_SEQ "${kiln_seq0}"
	setenv kiln_next 1
else
	setenv BOOT_ORDER "${kiln_ord1}"
	setenv BOOT_A_LEFT "${kiln_a1}"
	setenv BOOT_B_LEFT "${kiln_b1}"
	setenv KILN_SEQ "${kiln_seq1}"
	setenv kiln_next 0
fi
test -n "${kiln_cur}" && echo "kiln: state${kiln_cur}.env: BOOT_ORDER=${BOOT_ORDER} BOOT_A_LEFT=${BOOT_A_LEFT} BOOT_B_LEFT=${BOOT_B_LEFT} KILN_SEQ=${KILN_SEQ}"

# The first slot in BOOT_ORDER with tries left.
setenv kiln_slot
setenv kiln_first
setenv kiln_skipped
for kiln_x in ${BOOT_ORDER}; do
	setenv kiln_left
	if test "${kiln_x}" = A; then setenv kiln_left "${BOOT_A_LEFT}"; fi
	if test "${kiln_x}" = B; then setenv kiln_left "${BOOT_B_LEFT}"; fi
	if test -n "${kiln_left}"; then
		test -n "${kiln_first}" || setenv kiln_first ${kiln_x}
		if test -z "${kiln_slot}"; then
			if test ${kiln_left} -gt 0; then
				setenv kiln_slot ${kiln_x}
			else
				test -n "${kiln_skipped}" || setenv kiln_skipped ${kiln_x}
			fi
		fi
	fi
done
if test -z "${kiln_first}"; then
	echo "kiln: BOOT_ORDER '${BOOT_ORDER}' names no slot: A B"
	setenv BOOT_ORDER "A B"
	setenv kiln_first A
fi
if test -z "${kiln_slot}"; then
	echo "kiln: no slot has tries left (BOOT_ORDER ${BOOT_ORDER}): both reset to 3, booting ${kiln_first}"
	setenv BOOT_A_LEFT 3
	setenv BOOT_B_LEFT 3
	setenv kiln_slot ${kiln_first}
elif test -n "${kiln_skipped}"; then
	echo "kiln: slot ${kiln_skipped} has no tries left, falling back to ${kiln_slot}"
fi
if test ${kiln_slot} = A; then
	setexpr BOOT_A_LEFT ${BOOT_A_LEFT} - 1
	setenv kiln_left ${BOOT_A_LEFT}
	setenv kiln_rootpart 2
else
	setexpr BOOT_B_LEFT ${BOOT_B_LEFT} - 1
	setenv kiln_left ${BOOT_B_LEFT}
	setenv kiln_rootpart 3
fi
echo "kiln: booting slot ${kiln_slot} (tries left ${kiln_left})"

# KILN_SEQ + 1, in decimal: setexpr adds in hex, so the digits are taken
# as BCD and each digit that became 'a' carries (+6 at its place; the
# digit at place P is SEQ / P % 10, all in hex). 16 digits fit U-Boot's
# 64 bits; kiln-bootstate takes at most 15.
setexpr KILN_SEQ ${KILN_SEQ} + 1
setenv kiln_carry 1
for kiln_p in 1 10 100 1000 10000 100000 1000000 10000000 100000000 1000000000 10000000000 100000000000 1000000000000 10000000000000 100000000000000 1000000000000000; do
	if test ${kiln_carry} = 1; then
		setexpr kiln_t ${KILN_SEQ} / ${kiln_p}
		setexpr kiln_t ${kiln_t} % 10
		if test ${kiln_t} = a; then
			setexpr kiln_t ${kiln_p} * 6
			setexpr KILN_SEQ ${KILN_SEQ} + ${kiln_t}
		else
			setenv kiln_carry 0
		fi
	fi
done
mw.b ${kiln_out} 0 0x1000
if env export -c -s 0x1000 ${kiln_out} BOOT_ORDER BOOT_A_LEFT BOOT_B_LEFT KILN_SEQ && fatwrite ${devtype} ${kiln_fat} ${kiln_out} state${kiln_next}.env 0x1000; then
	echo "kiln: state${kiln_next}.env written (KILN_SEQ=${KILN_SEQ})"
else
	echo "kiln: WARNING: cannot write state${kiln_next}.env: this boot is not counted"
fi

# Root and data by PARTUUID (MBR: disk signature and partition number).
part uuid ${devtype} ${devnum}:${kiln_rootpart} kiln_root
part uuid ${devtype} ${devnum}:4 kiln_data
# More kernel arguments for this device, if any: cmdline.env on the FAT,
# a text env file with one line "kiln_args=..." (only that is taken).
setenv kiln_args
if test -e ${devtype} ${kiln_fat} cmdline.env && load ${devtype} ${kiln_fat} ${kiln_out} cmdline.env; then
	env import -t ${kiln_out} ${filesize} kiln_args
fi
setenv bootargs "${kiln_cmdline} kiln.slot=${kiln_slot} root=PARTUUID=${kiln_root} kiln.data=PARTUUID=${kiln_data} ${kiln_args}"
echo "kiln: fdtfile=${fdtfile} bootargs=${bootargs}"
# vmlinuz is a gzip-compressed Image: booti moves it to kernel_comp_addr_r
# and decompresses it to kiln_kernel
load ${devtype} ${kiln_fat} ${kiln_kernel} vmlinuz || echo "kiln: cannot load vmlinuz"
setenv kernel_comp_size ${filesize}
setenv kernel_comp_addr_r ${kiln_comp}
load ${devtype} ${kiln_fat} ${kiln_initrd} initramfs.img || echo "kiln: cannot load initramfs.img"
setenv kiln_initrd_size ${filesize}
# the board's device tree from the FAT (U-Boot names it in fdtfile on a
# Pi), else the one U-Boot was given (QEMU's virt makes its own)
if test -n "${fdtfile}" && load ${devtype} ${kiln_fat} ${kiln_fdt} ${fdtfile}; then
	booti ${kiln_kernel} ${kiln_initrd}:${kiln_initrd_size} ${kiln_fdt}
	echo "kiln: booti failed with ${fdtfile}"
fi
echo "kiln: booting with the device tree at ${fdt_addr}"
booti ${kiln_kernel} ${kiln_initrd}:${kiln_initrd_size} ${fdt_addr}
echo "kiln: FATAL: booti failed"
