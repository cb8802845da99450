@ The process entry of the static 32-bit ARM programs (scripts/build-board.sh armv7; CMakeLists.txt
@ links kestrel and kestrel-convert with -e kestrel_armv7_entry there). It refuses a CPU without
@ NEON and VFPv4 with the same one-line error as tools/require_neon.cc, but before glibc's _start:
@ Debian's armhf C library, its start code included, is Thumb-2 code, which a CPU older than
@ ARMv7 (ARMv6: Raspberry Pi 1 and Zero, qemu's arm1176) cannot run, so there the constructor in
@ require_neon.cc is never reached and the program dies of SIGILL instead. This file is ARM (A32)
@ code of ARMv5TE, which every such CPU runs; it reads AT_HWCAP from the auxiliary vector above
@ the initial stack, writes with the write system call and leaves with exit_group. A CPU with
@ both features goes on to glibc's _start with sp and r0 as the kernel left them. (Dynamically
@ linked programs start in the Thumb-2 loader, before any code of ours: there only the
@ constructor's check exists.)

        .syntax unified
        .arch armv5te
        .arm

        .section .rodata
needs:
        .ascii  ": error: this build needs a CPU with NEON and VFPv4 (an ARMv7 core such as "
        .ascii  "Cortex-A7, A15 or A17, or a 64-bit ARM core running a 32-bit OS); this CPU has "
needs_end:
neither:
        .ascii  "neither NEON nor VFPv4\n"
neither_end:
no_neon:
        .ascii  "no NEON\n"
no_neon_end:
no_vfpv4:
        .ascii  "NEON but no VFPv4 (a Cortex-A8 or A9 class core)\n"
no_vfpv4_end:
        .equ    NEEDS_LEN, needs_end - needs
        .equ    NEITHER_LEN, neither_end - neither
        .equ    NO_NEON_LEN, no_neon_end - no_neon
        .equ    NO_VFPV4_LEN, no_vfpv4_end - no_vfpv4

        .text
        .align 2
        .global kestrel_armv7_entry
        .type kestrel_armv7_entry, %function
kestrel_armv7_entry:
        @ sp: argc, argv[0..argc-1], 0, envp..., 0, then (type, value) pairs up to AT_NULL.
        mov     r3, sp
        ldr     r1, [r3], #4            @ argc
        ldr     r4, [r3]                @ argv[0], for the program's name
        add     r3, r3, r1, lsl #2      @ past argv
        add     r3, r3, #4              @ past its 0
1:      ldr     r1, [r3], #4            @ past envp and its 0
        cmp     r1, #0
        bne     1b
        mov     r2, #0                  @ no AT_HWCAP entry reads as no features
2:      ldr     r1, [r3], #8            @ a pair's type; its value is at [r3, #-4]
        cmp     r1, #16                 @ AT_HWCAP
        ldreq   r2, [r3, #-4]
        beq     3f
        cmp     r1, #0                  @ AT_NULL
        bne     2b
3:      and     r5, r2, #(1 << 12)      @ HWCAP_NEON
        and     r6, r2, #(1 << 16)      @ HWCAP_VFPv4
        cmp     r5, #0
        cmpne   r6, #0
        beq     refuse
        ldr     ip, =_start             @ glibc's entry, Thumb: bx switches with the address's bit 0
        bx      ip

refuse:
        @ The name: argv[0] from its last '/' on.
        mov     r8, r4
        mov     r9, r4
4:      ldrb    r1, [r9], #1
        cmp     r1, #0
        beq     5f
        cmp     r1, #'/'
        moveq   r8, r9
        b       4b
5:      mov     r1, r8
        sub     r2, r9, r8
        sub     r2, r2, #1              @ without the terminating 0
        bl      say
        ldr     r1, =needs
        ldr     r2, =NEEDS_LEN
        bl      say
        cmp     r5, #0
        bne     6f
        cmp     r6, #0
        ldreq   r1, =neither
        ldreq   r2, =NEITHER_LEN
        ldrne   r1, =no_neon
        ldrne   r2, =NO_NEON_LEN
        b       7f
6:      ldr     r1, =no_vfpv4
        ldr     r2, =NO_VFPV4_LEN
7:      bl      say
        mov     r0, #1
        mov     r7, #248                @ exit_group(1)
        svc     #0

say:    @ write(2, r1, r2)
        mov     r0, #2
        mov     r7, #4
        svc     #0
        bx      lr
        .ltorg
        .size   kestrel_armv7_entry, . - kestrel_armv7_entry

        .section .note.GNU-stack, "", %progbits
