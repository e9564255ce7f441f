// SPDX-License-Identifier: Apache-2.0
//go:build xscgo

// Built with -tags xscgo as xs_gomix_cgo (tests/daemon/unwind/unwind_go.sh): the same program linked with
// cgo, as most Go services built where a C compiler is are. Its C code (runtime/cgo's, this
// file's) has .eh_frame; its Go code has none, only .gopclntab.
package main

// static int xs_cgo_one(void) { return 1; }
import "C"

var cgoOne = int(C.xs_cgo_one())
