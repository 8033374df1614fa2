#include "textflag.h"

// func rawVfork(flags, pidfd uintptr) (pid, errno uintptr)
//
// clone(flags, 0, pidfd, 0, 0) for a vfork: the child runs on the
// parent's stack until its execve, so the return address is kept in a
// register across the system call, not on the stack the child writes
// (as syscall.rawVforkSyscall does).
TEXT ·rawVfork(SB),NOSPLIT|NOFRAME,$0-32
	MOVQ	flags+0(FP), DI
	MOVQ	$0, SI
	MOVQ	pidfd+8(FP), DX
	MOVQ	$0, R10
	MOVQ	$0, R8
	MOVQ	$0, R9
	MOVQ	$56, AX // SYS_clone
	POPQ	R12
	SYSCALL
	PUSHQ	R12
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$-1, pid+16(FP)
	NEGQ	AX
	MOVQ	AX, errno+24(FP)
	RET
ok:
	MOVQ	AX, pid+16(FP)
	MOVQ	$0, errno+24(FP)
	RET
