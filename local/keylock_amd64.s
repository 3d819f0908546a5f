//go:build amd64 && !race

#include "textflag.h"

// func unlockStore(p *uint32)
TEXT ·unlockStore(SB), NOSPLIT, $0-8
	MOVQ	p+0(FP), AX
	MOVL	$0, (AX)
	RET

// func spinPause(n uint32)
TEXT ·spinPause(SB), NOSPLIT, $0-4
	MOVL	n+0(FP), AX
again:
	PAUSE
	SUBL	$1, AX
	JNZ	again
	RET
