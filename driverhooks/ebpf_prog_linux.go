//go:build linux

package driverhooks

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// progGen builds the programs over the backend's maps. Every program keeps the
// tracepoint context in R6 and the process's counters in R9 (registers the helpers
// preserve), and builds the call's in-flight entry on the stack:
//
//	fp-64 thread id (bpf_get_current_pid_tgid), the in-flight map's key
//	fp-56 start, fp-48 end, fp-40 start2, fp-32 end2, fp-24 op (u32), fp-20 flags (u32)
//	fp-16 struct bpf_pidns_info, fp-8 counter slot, fp-4 thread group id
type progGen struct {
	filter, ring, ctrs, inflight *ebpf.Map
	nsDev, nsIno                 uint64
}

const (
	rCtx   = asm.R6
	rStart = asm.R7
	rEnd   = asm.R8
	rCtr   = asm.R9

	fpTid   = -64
	fpVal   = -56 // the in-flight value: ebpfInflightSize bytes
	fpOp    = fpVal + 32
	fpFlags = fpVal + 36
)

// arg loads the tracepoint argument at off into dst.
func arg(dst asm.Register, off int16) asm.Instruction {
	return asm.LoadMem(dst, rCtx, off, asm.DWord)
}

// watched exits unless the calling thread belongs to a watched process, and leaves
// a pointer to that process's counters in R9. The thread group id is taken in this
// process's pid namespace (the one the library registered its pid in); a thread in
// another namespace fails the helper and is skipped.
func (g *progGen) watched() asm.Instructions {
	return asm.Instructions{
		asm.LoadImm(asm.R1, int64(g.nsDev), asm.DWord),
		asm.LoadImm(asm.R2, int64(g.nsIno), asm.DWord),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -16), // struct bpf_pidns_info {u32 pid, tgid}
		asm.Mov.Imm(asm.R4, 8),
		asm.FnGetNsCurrentPidTgid.Call(),
		asm.JNE.Imm(asm.R0, 0, "exit"),
		asm.LoadMem(asm.R1, asm.RFP, -12, asm.Word),
		asm.StoreMem(asm.RFP, -4, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, g.filter.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word), // the process's counter slot
		asm.StoreMem(asm.RFP, -8, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, g.ctrs.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.Mov.Reg(rCtr, asm.R0),
	}
}

// rangeAt stores [arg start, arg start + arg length) at the stack slot slot.
func rangeAt(slot int16, start, length int16) asm.Instructions {
	return asm.Instructions{
		arg(asm.R1, start),
		arg(asm.R2, length),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.RFP, slot, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, slot+8, asm.R2, asm.DWord),
	}
}

// noRange stores an empty range at slot.
func noRange(slot int16) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, slot, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, slot+8, asm.R1, asm.DWord),
	}
}

// track puts the value on the stack into the in-flight map under the thread id, so
// that the exit program can publish the ranges again once the call is over. A full
// map (more threads inside such calls at once than it holds) turns the record into
// a flush.
func (g *progGen) track(op, flags uint32) asm.Instructions {
	return asm.Instructions{
		asm.StoreImm(asm.RFP, fpOp, int64(op), asm.Word),
		asm.StoreImm(asm.RFP, fpFlags, int64(flags), asm.Word),
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, fpTid, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, g.inflight.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, fpTid),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, fpVal),
		asm.Mov.Imm(asm.R4, 0), // BPF_ANY
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "tracked"),
		asm.StoreImm(asm.RFP, fpFlags, int64(flags|recFlush|recUntracked), asm.Word),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("tracked"),
	}
}

// emit commits the record of the stack value to the ring (or jumps to lost when the
// ring is full), then bumps the sequence word (a fully ordered atomic) and ends;
// lost counts a record the ring had no room for, then bumps the sequence word.
func (g *progGen) emit() asm.Instructions {
	out := asm.Instructions{
		asm.LoadMapPtr(asm.R1, g.ring.FD()),
		asm.Mov.Imm(asm.R2, ebpfRecordSize),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "lost"),
	}
	for off := int16(0); off < 32; off += 8 {
		out = append(out,
			asm.LoadMem(asm.R1, asm.RFP, fpVal+off, asm.DWord),
			asm.StoreMem(asm.R0, off, asm.R1, asm.DWord))
	}
	return append(out,
		asm.LoadMem(asm.R1, asm.RFP, fpTid, asm.DWord),
		asm.StoreMem(asm.R0, recTid, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, fpOp, asm.DWord), // op and flags
		asm.StoreMem(asm.R0, recOp, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Mov.Imm(asm.R2, bpfRBNoWakeup),
		asm.FnRingbufSubmit.Call(),
		asm.Mov.Imm(asm.R1, 1),
		asm.FetchAdd.Mem(rCtr, asm.R1, asm.DWord, ctrSeq),
		asm.Ja.Label("exit"),
		asm.Mov.Imm(asm.R1, 1).WithSymbol("lost"),
		asm.FetchAdd.Mem(rCtr, asm.R1, asm.DWord, ctrLost),
		asm.Mov.Imm(asm.R1, 1),
		asm.FetchAdd.Mem(rCtr, asm.R1, asm.DWord, ctrSeq),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
}

// entry is the program of an unmapping call: checks (which may jump to exit) run
// first, then the process filter, then ranges fills the two ranges on the stack.
func (g *progGen) entry(checks, ranges asm.Instructions, op, flags uint32) asm.Instructions {
	out := asm.Instructions{asm.Mov.Reg(rCtx, asm.R1)}
	out = append(out, checks...)
	out = append(out, g.watched()...)
	out = append(out, ranges...)
	out = append(out, g.track(op, flags)...)
	return append(out, g.emit()...)
}

// adviceFilter exits unless the advice at off drops or replaces pages.
func adviceFilter(off int16) asm.Instructions {
	out := asm.Instructions{arg(asm.R1, off)}
	for _, a := range dropAdvice {
		out = append(out, asm.JEq.Imm32(asm.R1, a, "drops"))
	}
	return append(out, asm.Ja.Label("exit"), asm.Mov.Imm(asm.R0, 0).WithSymbol("drops"))
}

// oneRange fills the first range from the arguments start and length.
func oneRange(start, length int16) asm.Instructions {
	return append(rangeAt(fpVal, start, length), noRange(fpVal+16)...)
}

// flushRanges fills no range (a flush record).
func flushRanges() asm.Instructions { return append(noRange(fpVal), noRange(fpVal+16)...) }

func buildMunmap(g *progGen, off map[string]int16) (asm.Instructions, error) {
	return g.entry(nil, oneRange(off["addr"], off["len"]), opMunmap, 0), nil
}

func buildRemapFilePages(g *progGen, off map[string]int16) (asm.Instructions, error) {
	return g.entry(nil, oneRange(off["start"], off["size"]), opRemapFilePages, 0), nil
}

// buildMremap records the old range, and with MREMAP_FIXED the destination the call
// replaces.
func buildMremap(g *progGen, off map[string]int16) (asm.Instructions, error) {
	ranges := rangeAt(fpVal, off["addr"], off["old_len"])
	ranges = append(ranges, noRange(fpVal+16)...)
	ranges = append(ranges,
		arg(asm.R1, off["flags"]),
		asm.And.Imm(asm.R1, unix.MREMAP_FIXED),
		asm.JEq.Imm(asm.R1, 0, "notfixed"))
	ranges = append(ranges, rangeAt(fpVal+16, off["new_addr"], off["new_len"])...)
	ranges = append(ranges, asm.Mov.Imm(asm.R0, 0).WithSymbol("notfixed"))
	return g.entry(nil, ranges, opMremap, 0), nil
}

func buildMmap(g *progGen, off map[string]int16) (asm.Instructions, error) {
	fixed := asm.Instructions{
		arg(asm.R1, off["flags"]),
		asm.And.Imm(asm.R1, unix.MAP_FIXED),
		asm.JEq.Imm(asm.R1, 0, "exit"),
	}
	return g.entry(fixed, oneRange(off["addr"], off["len"]), opMmapFixed, 0), nil
}

func buildMadvise(g *progGen, off map[string]int16) (asm.Instructions, error) {
	return g.entry(adviceFilter(off["behavior"]), oneRange(off["start"], off["len_in"]), opMadvise, 0), nil
}

func buildProcessMadvise(g *progGen, off map[string]int16) (asm.Instructions, error) {
	return g.entry(adviceFilter(off["behavior"]), flushRanges(), opProcessMadvise, recFlush), nil
}

func buildShmdt(g *progGen, off map[string]int16) (asm.Instructions, error) {
	return g.entry(nil, flushRanges(), opShmdt, recFlush), nil
}

func buildShmat(g *progGen, off map[string]int16) (asm.Instructions, error) {
	remap := asm.Instructions{
		arg(asm.R1, off["shmflg"]),
		asm.And.Imm(asm.R1, shmRemap),
		asm.JEq.Imm(asm.R1, 0, "exit"),
	}
	return g.entry(remap, flushRanges(), opShmat, recFlush), nil
}

// buildBrkEnter records [addr, highest break) for brk(addr) below the highest break
// seen, and [addr, top) while none was seen yet. Every brk call of the process is
// tracked (silently when nothing is recorded), so that the exit program can raise
// the highest break to what the call returns; a silent call the in-flight map has
// no room for makes the highest break unknown (the top) for good.
func buildBrkEnter(g *progGen, off map[string]int16) (asm.Instructions, error) {
	out := asm.Instructions{asm.Mov.Reg(rCtx, asm.R1)}
	out = append(out, g.watched()...)
	out = append(out,
		arg(rStart, off["brk"]),
		asm.LoadMem(rEnd, rCtr, ctrBrk, asm.DWord),
		asm.JEq.Imm(rStart, 0, "silent"), // brk(0) asks for the break
		asm.JNE.Imm(rEnd, 0, "known"),
		asm.LoadImm(rEnd, -1, asm.DWord),
		asm.JGE.Reg(rStart, rEnd, "silent").WithSymbol("known"),
		asm.StoreMem(asm.RFP, fpVal, rStart, asm.DWord),
		asm.StoreMem(asm.RFP, fpVal+8, rEnd, asm.DWord),
	)
	out = append(out, noRange(fpVal+16)...)
	out = append(out, g.track(opBrk, 0)...)
	out = append(out, asm.Ja.Label("record"))
	silent := flushRanges()
	silent[0] = silent[0].WithSymbol("silent")
	out = append(out, silent...)
	out = append(out,
		asm.StoreImm(asm.RFP, fpOp, int64(opBrk), asm.Word),
		asm.StoreImm(asm.RFP, fpFlags, recSilent, asm.Word),
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, fpTid, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, g.inflight.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, fpTid),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, fpVal),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.LoadImm(asm.R1, -1, asm.DWord),
		asm.Xchg.Mem(rCtr, asm.R1, asm.DWord, ctrBrk),
		asm.Ja.Label("exit"),
	)
	emit := g.emit()
	emit[0] = emit[0].WithSymbol("record")
	return append(out, emit...), nil
}

// brkRetries bounds the compare-and-swap attempts that raise the highest break;
// after that many lost races it becomes the top of the address space for good.
const brkRetries = 8

// buildExit is the raw sys_exit program: for a thread whose call an entry program
// tracked, it raises the highest break (brk), commits the call's record again with
// recExit, forgets the call and bumps the sequence word. A registration made while
// the call was in flight (of the old pages) is invalidated by that record, and a
// drain that runs while the call is in flight keeps the subscriptions pending.
func (g *progGen) buildExit() asm.Instructions {
	out := asm.Instructions{
		asm.Mov.Reg(rCtx, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, fpTid, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, g.inflight.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, fpTid),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.Mov.Reg(rStart, asm.R0), // the in-flight value
		asm.StoreImm(asm.RFP, -8, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, g.ctrs.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "forget"),
		asm.Mov.Reg(rCtr, asm.R0),
		asm.LoadMem(asm.R1, rStart, 32, asm.Word), // op
		asm.JNE.Imm(asm.R1, int32(opBrk), "record"),
		asm.LoadMem(rEnd, rCtx, 8, asm.DWord), // the break brk returned
		asm.LoadMem(asm.R0, rCtr, ctrBrk, asm.DWord),
	}
	for i := 0; i < brkRetries; i++ {
		out = append(out,
			asm.JGE.Reg(asm.R0, rEnd, "raised"),
			asm.Mov.Reg(asm.R2, asm.R0),
			asm.Mov.Reg(asm.R1, rEnd),
			asm.CmpXchg.Mem(rCtr, asm.R1, asm.DWord, ctrBrk),
			asm.JEq.Reg(asm.R0, asm.R2, "raised"),
		)
	}
	out = append(out,
		asm.LoadImm(asm.R1, -1, asm.DWord),
		asm.Xchg.Mem(rCtr, asm.R1, asm.DWord, ctrBrk),
		asm.LoadMem(asm.R1, rStart, 36, asm.Word).WithSymbol("raised"), // flags
		asm.And.Imm(asm.R1, recSilent),
		asm.JNE.Imm(asm.R1, 0, "forget"),
		asm.LoadMapPtr(asm.R1, g.ring.FD()).WithSymbol("record"),
		asm.Mov.Imm(asm.R2, ebpfRecordSize),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "lost"),
	)
	for off := int16(0); off < 32; off += 8 {
		out = append(out,
			asm.LoadMem(asm.R1, rStart, off, asm.DWord),
			asm.StoreMem(asm.R0, off, asm.R1, asm.DWord))
	}
	out = append(out,
		asm.LoadMem(asm.R1, asm.RFP, fpTid, asm.DWord),
		asm.StoreMem(asm.R0, recTid, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rStart, 32, asm.Word),
		asm.StoreMem(asm.R0, recOp, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, rStart, 36, asm.Word),
		asm.Or.Imm32(asm.R1, recExit),
		asm.StoreMem(asm.R0, recOp+4, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Mov.Imm(asm.R2, bpfRBNoWakeup),
		asm.FnRingbufSubmit.Call(),
		asm.Ja.Label("done"),
		asm.Mov.Imm(asm.R1, 1).WithSymbol("lost"),
		asm.FetchAdd.Mem(rCtr, asm.R1, asm.DWord, ctrLost),
		// Forget the call once its record is committed, then bump.
		asm.LoadMapPtr(asm.R1, g.inflight.FD()).WithSymbol("done"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, fpTid),
		asm.FnMapDeleteElem.Call(),
		asm.Mov.Imm(asm.R1, 1),
		asm.FetchAdd.Mem(rCtr, asm.R1, asm.DWord, ctrSeq),
		asm.Ja.Label("exit"),
		asm.LoadMapPtr(asm.R1, g.inflight.FD()).WithSymbol("forget"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, fpTid),
		asm.FnMapDeleteElem.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	return out
}
