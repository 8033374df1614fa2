#include "textflag.h"

// func rawVfork(flags, pidfd uintptr) (pid, errno uintptr)
//
// clone(flags, 0, pidfd, 0, 0) for a vfork: the child runs on the
// parent's stack until its execve; the return address stays in the link
// register (as syscall.rawVforkSyscall does).
TEXT ·rawVfork(SB),NOSPLIT,$0-32
	MOVD	flags+0(FP), R0
	MOVD	$0, R1
	MOVD	pidfd+8(FP), R2
	MOVD	$0, R3
	MOVD	$0, R4
	MOVD	$0, R5
	MOVD	$220, R8 // SYS_clone
	SVC
	CMN	$4095, R0
	BCC	ok
	MOVD	$-1, R4
	MOVD	R4, pid+16(FP)
	NEG	R0, R0
	MOVD	R0, errno+24(FP)
	RET
ok:
	MOVD	R0, pid+16(FP)
	MOVD	ZR, errno+24(FP)
	RET
