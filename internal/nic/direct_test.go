package nic

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/bootstrap/childtest"
	"github.com/goportals/goportals/md"
)

// The direct-access tests run two-rank jobs over a non-matching NI whose portal
// index 4 holds one persistent list entry over md.Alloc memory (success events
// disabled, communication counted), the PGAS shape direct access serves. Each job
// runs once with PTL_DIRECT=off (everything through the target's engine) and once
// with PTL_DIRECT=auto; the transcripts of every event and counter must be equal,
// and only the auto run may have carried operations out directly.

// runDirectJob launches a two-rank job in role with PTL_DIRECT=mode.
func runDirectJob(t *testing.T, role, mode string) string {
	t.Helper()
	return runDirectJobN(t, role, mode, 2)
}

// runDirectJobN launches n ranks in role with PTL_DIRECT=mode.
func runDirectJobN(t *testing.T, role, mode string, n int) string {
	t.Helper()
	var out lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	env := append(childEnv(role), "PTL_DIRECT="+mode)
	res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: n, Argv: []string{os.Args[0], "-test.run=^$"},
		Env: env, Stdout: &out, Stderr: &out, Prefix: true, Timeout: 100 * time.Second})
	if e := checkJob(out.String(), res, err); e != nil {
		t.Fatal(e)
	}
	return out.String()
}

// transcriptLineRE matches a transcript line of the job's prefixed output:
// "[r] T ..." with the rank in group 1.
var transcriptLineRE = regexp.MustCompile(`^\[(\d+)\] T `)

// transcript returns each rank's transcript lines ("[r] T ...", without the
// direct-operation counts, which differ on purpose), in the rank's own order.
// The launcher merges the ranks' output as it arrives, so where one rank's lines
// fall among another's depends on timing; within a rank the order is the rank's.
func transcript(out string) map[string][]string {
	m := map[string][]string{}
	for _, s := range strings.Split(out, "\n") {
		if g := transcriptLineRE.FindStringSubmatch(s); g != nil {
			m[g[1]] = append(m[g[1]], s)
		}
	}
	return m
}

// transcriptDiff compares two per-rank transcripts rank by rank and describes
// the first difference, or returns "" when every rank's lines are the same.
func transcriptDiff(a, b map[string][]string) string {
	ranks := map[string]bool{}
	for r := range a {
		ranks[r] = true
	}
	for r := range b {
		ranks[r] = true
	}
	keys := make([]string, 0, len(ranks))
	for r := range ranks {
		keys = append(keys, r)
	}
	sort.Strings(keys)
	for _, r := range keys {
		x, y := a[r], b[r]
		for i := 0; i < len(x) || i < len(y); i++ {
			var lx, ly string
			if i < len(x) {
				lx = x[i]
			}
			if i < len(y) {
				ly = y[i]
			}
			if lx != ly {
				return fmt.Sprintf("rank %s line %d: %q against %q", r, i, lx, ly)
			}
		}
	}
	return ""
}

// transcriptLen is the number of transcript lines over all ranks.
func transcriptLen(m map[string][]string) int {
	n := 0
	for _, l := range m {
		n += len(l)
	}
	return n
}

// joinTranscript prints a per-rank transcript rank by rank.
func joinTranscript(m map[string][]string) string {
	keys := make([]string, 0, len(m))
	for r := range m {
		keys = append(keys, r)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, r := range keys {
		for _, s := range m[r] {
			b.WriteString(s)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

var directCountRE = regexp.MustCompile(`\[(\d)\] direct (\d+)`)

// directCounts returns each rank's count of direct operations.
func directCounts(out string) map[string]uint64 {
	m := map[string]uint64{}
	for _, s := range directCountRE.FindAllStringSubmatch(out, -1) {
		var n uint64
		fmt.Sscan(s[2], &n)
		m[s[1]] = n
	}
	return m
}

// TestDirectSameEvents: put (every ack kind, the entry's own ack-disabling twin,
// sizes from 8 bytes to 1 MiB), get, a put that truncates, a put the entry's user
// forbids, a get the entry's options forbid: every event the initiator sees, the
// target's counter, its status registers and its memory are the same with and
// without direct access, and the auto run did go direct.
func TestDirectSameEvents(t *testing.T) {
	off := runDirectJob(t, "direct-events", "off")
	auto := runDirectJob(t, "direct-events", "auto")
	a, b := transcript(off), transcript(auto)
	if transcriptLen(a) < 20 || len(a["0"]) == 0 || len(a["1"]) == 0 {
		t.Fatalf("the off run printed %d transcript lines:\n%s", transcriptLen(a), off)
	}
	if d := transcriptDiff(a, b); d != "" {
		t.Fatalf("transcripts differ: %s\noff:\n%s\nauto:\n%s", d, joinTranscript(a), joinTranscript(b))
	}
	if n := directCounts(off); n["0"] != 0 {
		t.Fatalf("PTL_DIRECT=off carried %d operations out directly", n["0"])
	}
	if n := directCounts(auto); n["0"] < 10 {
		t.Fatalf("PTL_DIRECT=auto carried %d operations out directly (%v):\n%s", n["0"], n, auto)
	}
}

// TestTranscriptPerRank: the transcript comparison ignores where one rank's
// lines were merged among another's, and catches a changed, missing or
// reordered line of any rank.
func TestTranscriptPerRank(t *testing.T) {
	base := "[0] T a\n[0] T b\n[1] T x\n[0] T c\n[1] T y\n"
	merged := "[1] T x\n[0] T a\n[1] T y\n[0] T b\n[0] T c\nnoise\n"
	if d := transcriptDiff(transcript(base), transcript(merged)); d != "" {
		t.Fatalf("the same lines merged differently compare unequal: %s", d)
	}
	for _, bad := range []string{
		"[0] T a\n[0] T b\n[1] T x\n[0] T c\n[1] T z\n", // changed
		"[0] T a\n[0] T b\n[1] T x\n[0] T c\n",          // missing
		"[0] T b\n[0] T a\n[1] T x\n[0] T c\n[1] T y\n", // reordered within a rank
		"[0] T a\n[0] T b\n[1] T x\n[0] T c\n[1] T y\n[2] T q\n",
	} {
		if transcriptDiff(transcript(base), transcript(bad)) == "" {
			t.Fatalf("a real difference compares equal:\n%s", bad)
		}
	}
}

// TestDirectWAWOrder: a put that goes through the target's engine (it truncates,
// so direct access refuses it) followed by a short put to the same bytes that
// could go direct: the later put's data must win, for a long (tracked) first put
// once its ACK came, and at once for an eager (fire and forget) one.
func TestDirectWAWOrder(t *testing.T) {
	out := runDirectJob(t, "direct-waw", "auto")
	if !strings.Contains(out, "[1] T waw ok") {
		t.Fatalf("no verdict:\n%s", out)
	}
	if n := directCounts(out); n["0"] == 0 {
		t.Fatalf("no operation went direct, the test shows nothing:\n%s", out)
	}
}

// TestDirectRevoke: rank 0 puts as fast as it can (each put writes a new value);
// rank 1 unlinks the entry, disables the portal index, or frees the counter while
// the puts go on. Once the call returns, the entry's memory (and the freed
// counter's cell) must not change any more.
func TestDirectRevoke(t *testing.T) {
	out := runDirectJob(t, "direct-revoke", "auto")
	for _, w := range []string{"unlink", "disable", "ctfree"} {
		if !strings.Contains(out, "[1] T revoke "+w+" ok") {
			t.Fatalf("no verdict for %s:\n%s", w, out)
		}
	}
	if n := directCounts(out); n["0"] == 0 {
		t.Fatalf("no operation went direct, the test shows nothing:\n%s", out)
	}
}

// TestDirectNotice: a direct put counted into the target's counter wakes a
// target blocked in CT.Wait on it and fires the triggered operation it reached,
// though the target's engine never saw the put.
func TestDirectNotice(t *testing.T) {
	out := runDirectJob(t, "direct-notice", "auto")
	if !strings.Contains(out, "[1] T notice ok") {
		t.Fatalf("no verdict:\n%s", out)
	}
	if n := directCounts(out); n["0"] < 2 {
		t.Fatalf("the puts did not go direct:\n%s", out)
	}
}

func directNotice(ctx context.Context) error {
	r, err := directSetup(ctx, directOpts)
	if err != nil {
		return err
	}
	defer r.close()
	if r.me == 1 {
		ct2, err := r.ni.CTAlloc()
		if err != nil {
			return err
		}
		if err := TriggeredCTInc(ct2, CTEvent{Success: 1}, r.ct, 1); err != nil {
			return err
		}
		woke := make(chan error, 1)
		go func() {
			_, err := r.ct.Wait(ctx, 2)
			woke <- err
		}()
		if err := r.b.Barrier(ctx); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if v, err := ct2.Wait(wctx, 1); err != nil {
			return fmt.Errorf("the trigger on the entry's counter never fired: %+v %v", v, err)
		}
		select {
		case err := <-woke:
			if err != nil {
				return err
			}
		case <-wctx.Done():
			return fmt.Errorf("CT.Wait never woke")
		}
		fmt.Println("T notice ok")
		return r.b.Barrier(ctx)
	}
	m, err := r.ni.MDBind(MDSpec{Start: make([]byte, 8), Options: MDVolatile})
	if err != nil {
		return err
	}
	if err := r.b.Barrier(ctx); err != nil {
		return err
	}
	// Long enough for rank 1's waits to stop spinning and sleep.
	for i := 0; i < 2; i++ {
		time.Sleep(500 * time.Millisecond)
		if err := Put(m, 0, 8, NoAckReq, r.peer, 4, 0, 8*uint64(i), 0, 0); err != nil {
			return err
		}
	}
	return r.b.Barrier(ctx)
}

// TestDirectAtomicMixed: rank 0 adds to one word of rank 1's entry by direct
// access while rank 2, with direct access off, adds to the same word through
// rank 1's engine, and both fetch-and-add a second word: no update is lost and
// no fetched value repeats, so the engine's atomics are atomic with the direct
// ones.
func TestDirectAtomicMixed(t *testing.T) {
	out := runDirectJobN(t, "direct-atomic", "auto", 3)
	if !strings.Contains(out, "[1] T atomic mixed ok") {
		t.Fatalf("no verdict:\n%s", out)
	}
	if n := directCounts(out); n["0"] < 1000 || n["2"] != 0 {
		t.Fatalf("rank 0 should go direct, rank 2 not: %v\n%s", n, out)
	}
}

// mixedN is how many adds each adder makes (fewer under the race detector,
// which slows every access).
var mixedN = map[bool]int{false: 20000, true: 3000}[childtest.RaceEnabled]

func directAtomicRole(ctx context.Context) error {
	if os.Getenv(bootstrap.EnvRank) == "2" {
		os.Setenv("PTL_DIRECT", "off")
	}
	r, err := directSetup(ctx, directOpts)
	if err != nil {
		return err
	}
	defer r.close()
	if r.me == 1 {
		if err := r.b.Barrier(ctx); err != nil { // both adders are done
			return err
		}
		if got := binary.LittleEndian.Uint64(r.heap[64:]); got != uint64(2*mixedN) {
			return fmt.Errorf("sum %d after %d adds", got, 2*mixedN)
		}
		if got := binary.LittleEndian.Uint64(r.heap[128:]); got != uint64(2*mixedN) {
			return fmt.Errorf("fetch-add word %d after %d", got, 2*mixedN)
		}
		fmt.Println("T atomic mixed ok")
		return r.b.Barrier(ctx)
	}
	one := make([]byte, 8)
	binary.LittleEndian.PutUint64(one, 1)
	old := make([]byte, 8)
	pm, err := r.ni.MDBind(MDSpec{Start: one, Options: MDVolatile})
	if err != nil {
		return err
	}
	gq, err := r.ni.EQAlloc(16)
	if err != nil {
		return err
	}
	gm, err := r.ni.MDBind(MDSpec{Start: old, EQ: gq})
	if err != nil {
		return err
	}
	seen := make(map[uint64]bool, mixedN)
	for i := 0; i < mixedN; i++ {
		if err := Atomic(pm, 0, 8, NoAckReq, r.peer, 4, 0, 64, 0, 0, eq.OpSum, eq.Uint64); err != nil {
			return err
		}
		if err := FetchAtomic(gm, 0, pm, 0, 8, r.peer, 4, 0, 128, 0, 0, eq.OpSum, eq.Uint64); err != nil {
			return err
		}
		if ev, err := gq.Wait(ctx); err != nil || ev.Type != eq.EventReply || ev.NIFail != eq.NIOK {
			return fmt.Errorf("fetch-add: %+v %v", ev, err)
		}
		v := binary.LittleEndian.Uint64(old)
		if seen[v] {
			return fmt.Errorf("fetch-add returned %d twice", v)
		}
		seen[v] = true
	}
	// Rank 2's last plain adds are handled once a get through the engine answers.
	gm2, err := r.ni.MDBind(MDSpec{Start: make([]byte, 8), EQ: gq})
	if err != nil {
		return err
	}
	if err := Get(gm2, 0, 8, r.peer, 4, 0, 0, 0); err != nil {
		return err
	}
	if ev, err := gq.Wait(ctx); err != nil || ev.Type != eq.EventReply {
		return fmt.Errorf("get: %+v %v", ev, err)
	}
	if err := r.b.Barrier(ctx); err != nil {
		return err
	}
	return r.b.Barrier(ctx)
}

// directSetup is the common start of the direct roles: a non-matching NI, an
// event queue and counter on the target, and portal index 4 with one persistent
// entry over heap (md.Alloc).
type directRank struct {
	b     bootstrap.Bootstrap
	p     *Process
	ni    *NI
	me    int
	peer  ProcessID
	q     *EQ // the portal index's queue (target) or the descriptors' (initiator)
	ct    *CT
	alloc *md.Allocation
	heap  []byte
	le    *LE
}

const directHeap = 2 << 20

func directSetup(ctx context.Context, leOpts MEOptions) (*directRank, error) {
	b, err := bootstrap.Open(ctx)
	if err != nil {
		return nil, err
	}
	p, err := NewProcess(b, nil)
	if err != nil {
		return nil, err
	}
	ni, err := p.NIInit(IfaceDefault, NINoMatching|NIPhysical, PIDAny, nil)
	if err != nil {
		return nil, err
	}
	// Rank 1 is the target of every other rank; rank 1's peer is rank 0.
	peer := 1
	if b.Rank() == 1 {
		peer = 0
	}
	r := &directRank{b: b, p: p, ni: ni, me: b.Rank(), peer: p.JobMap()[peer]}
	if r.q, err = ni.EQAlloc(1024); err != nil {
		return nil, err
	}
	if r.ct, err = ni.CTAlloc(); err != nil {
		return nil, err
	}
	if r.alloc, err = md.Alloc(directHeap); err != nil {
		return nil, err
	}
	r.heap = r.alloc.Bytes()
	if _, err := ni.PTAlloc(0, r.q, 4); err != nil {
		return nil, err
	}
	if r.le, err = ni.LEAppend(4, LESpec{Start: r.heap[:1<<20], CT: r.ct, UID: UIDAny, Options: leOpts}, PriorityList, 7); err != nil {
		return nil, err
	}
	return r, b.Barrier(ctx)
}

func (r *directRank) close() {
	fmt.Printf("direct %d\n", r.ni.DirectOps())
	r.p.Close()
	r.alloc.Free()
	r.b.Close()
}

// evLine prints an event as a transcript line.
func evLine(what string, ev Event, err error) {
	fmt.Printf("T %s: %v type=%v fail=%v mlen=%d rlen=%d roff=%d list=%v user=%d pt=%d match=%d hdr=%d\n",
		what, err, ev.Type, ev.NIFail, ev.MLength, ev.RLength, ev.RemoteOffset, ev.List, ev.UserPtr, ev.PTIndex,
		ev.MatchBits, ev.HdrData)
}

const directOpts = MEOpPut | MEOpGet | MEEventLinkDisable | MEEventSuccessDisable | MEEventCTComm

// directRolesOS are the direct-access roles of one platform's tests.
var directRolesOS = map[string]func(context.Context) error{}

// runDirectRole runs a direct-access role if role names one.
func runDirectRole(role string) (int, bool) {
	f, ok := map[string]func(context.Context) error{
		"direct-events": directEvents,
		"direct-waw":    directWAW,
		"direct-revoke": directRevokeRole,
		"direct-notice": directNotice,
		"direct-atomic": directAtomicRole,
	}[role]
	if !ok {
		if f, ok = directRolesOS[role]; !ok {
			return 0, false
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := f(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "rank failed:", err)
		return 1, true
	}
	return 0, true
}

func directEvents(ctx context.Context) error {
	r, err := directSetup(ctx, directOpts)
	if err != nil {
		return err
	}
	defer r.close()
	// Portal index 5: an entry that acks nothing and counts bytes; 6: one for
	// another user (a permission violation); 8: gets only (puts are an operation
	// violation).
	for _, s := range []struct {
		pt   PTIndex
		opts MEOptions
		uid  UID
		off  int
	}{{5, directOpts | MEAckDisable | MEEventCTBytes, UIDAny, 1 << 20}, {6, directOpts, r.p.uid + 1, 1<<20 + 4096},
		{8, MEOpGet | MEEventSuccessDisable | MEEventCTComm | MEEventLinkDisable, UIDAny, 1<<20 + 8192},
		{9, MEOpGet | MEEventLinkDisable, UIDAny, 1<<20 + 12288}} { // 9: a fence (posts events: never direct)
		if _, err := r.ni.PTAlloc(0, r.q, s.pt); err != nil {
			return err
		}
		if _, err := r.ni.LEAppend(s.pt, LESpec{Start: r.heap[s.off : s.off+4096], CT: r.ct, UID: s.uid, Options: s.opts}, PriorityList, 9); err != nil {
			return err
		}
	}
	if err := r.b.Barrier(ctx); err != nil {
		return err
	}
	if r.me == 1 {
		if err := r.b.Barrier(ctx); err != nil { // rank 0 is done
			return err
		}
		v, _ := r.ct.Get()
		fmt.Printf("T target ct %+v\n", v)
		for _, sr := range []SR{SRDropCount, SRPermissionsViolations, SROperationsViolations, SRMalformed} {
			n, _ := r.ni.Status(sr)
			fmt.Printf("T target status %d = %d\n", sr, n)
		}
		for {
			ev, err := r.q.Get()
			if err != nil {
				break
			}
			evLine("target event", ev, nil)
		}
		sum := uint64(0)
		for i, c := range r.heap[:1<<20+3*4096] {
			sum = sum*31 + uint64(c) + uint64(i&7)
		}
		fmt.Printf("T target memory %x\n", sum)
		return r.b.Barrier(ctx)
	}
	src := make([]byte, 1<<20+64)
	for i := range src {
		src[i] = byte(i*7 + 3)
	}
	dst := make([]byte, 1<<20)
	ect, err := r.ni.CTAlloc()
	if err != nil {
		return err
	}
	iq, err := r.ni.EQAlloc(64)
	if err != nil {
		return err
	}
	fq, err := r.ni.EQAlloc(64)
	if err != nil {
		return err
	}
	pm, err := r.ni.MDBind(MDSpec{Start: src, EQ: iq, CT: ect, Options: MDEventCTSend | MDEventCTAck | MDEventCTBytes})
	if err != nil {
		return err
	}
	gm, err := r.ni.MDBind(MDSpec{Start: dst, EQ: iq, CT: ect, Options: MDEventCTReply})
	if err != nil {
		return err
	}
	fm, err := r.ni.MDBind(MDSpec{Start: make([]byte, 8), EQ: fq})
	if err != nil {
		return err
	}
	// drain waits for the operation's events, then for a get through the target's
	// engine (whose reply comes after every answer to what was sent before it), and
	// prints the events and the counter.
	drain := func(what string, want int) error {
		for i := 0; i < want; i++ {
			ev, err := iq.Wait(ctx)
			if err != nil {
				return err
			}
			evLine(what, ev, nil)
		}
		if err := Get(fm, 0, 8, r.peer, 9, 0, 0, 0); err != nil {
			return err
		}
		if ev, err := fq.Wait(ctx); err != nil || ev.Type != eq.EventReply {
			return fmt.Errorf("fence: %+v %v", ev, err)
		}
		if ev, err := iq.Get(); err == nil {
			evLine(what+" late", ev, nil)
		}
		v, _ := ect.Get()
		fmt.Printf("T %s ct %+v\n", what, v)
		return nil
	}
	type put struct {
		pt      PTIndex
		loff, n uint64
		roff    uint64
		ack     AckReq
		events  int
	}
	for i, p := range []put{
		{4, 0, 8, 0, AckReqFull, 2}, {4, 8, 8, 64, CTAckReq, 1}, {4, 16, 8, 128, OCAckReq, 1},
		{4, 24, 8, 192, NoAckReq, 1}, {4, 100, 4096, 4096, AckReqFull, 2}, {4, 0, 1 << 20, 0, AckReqFull, 2},
		{4, 3, 777, 1<<20 - 777, AckReqFull, 2},  // exactly to the end
		{4, 5, 4096, 1<<20 - 100, AckReqFull, 2}, // truncates: through the target
		{5, 0, 64, 8, AckReqFull, 1},             // acks disabled: SEND only
		{5, 0, 8192, 0, AckReqFull, 1},           // truncates; acks disabled
		{6, 0, 64, 0, AckReqFull, 2},             // permission violation
		{8, 0, 64, 0, AckReqFull, 2},             // operation violation
		{4, 64, 8, 1 << 20, AckReqFull, 2},       // offset at the end: zero bytes
	} {
		if err := Put(pm, p.loff, p.n, p.ack, r.peer, p.pt, 0, p.roff, uint64(i), uint64(i)*3); err != nil {
			return err
		}
		if err := drain(fmt.Sprintf("put %d", i), p.events); err != nil {
			return err
		}
	}
	for i, g := range []put{{4, 0, 8, 0, 0, 1}, {4, 8, 4096, 100, 0, 1}, {4, 0, 1 << 20, 0, 0, 1},
		{4, 0, 64, 1<<20 - 32, 0, 1}, {8, 0, 64, 0, 0, 1}, {5, 0, 64, 0, 0, 1}} {
		if err := Get(gm, g.loff, g.n, r.peer, g.pt, 0, g.roff, uint64(100+i)); err != nil {
			return err
		}
		if err := drain(fmt.Sprintf("get %d", i), g.events); err != nil {
			return err
		}
		sum := uint64(0)
		for _, c := range dst[:g.loff+g.n] {
			sum = sum*31 + uint64(c)
		}
		fmt.Printf("T get %d data %x\n", i, sum)
	}
	// Atomics: each with its operand from src (offset 64 on: bytes 7i+3), the old
	// data into dst, at 4096-byte steps of the entry's first page pair.
	for i, a := range []struct {
		kind   string
		op     AtomicOp
		dt     AtomicType
		n      uint64
		roff   uint64
		ack    AckReq
		events int
	}{
		{"atomic", eq.OpSum, eq.Uint64, 8, 0, AckReqFull, 2}, {"atomic", eq.OpSum, eq.Uint64, 64, 64, CTAckReq, 1},
		{"atomic", eq.OpBXor, eq.Uint32, 16, 128, AckReqFull, 2}, {"atomic", eq.OpSum, eq.Double, 16, 256, AckReqFull, 2},
		{"atomic", eq.OpMin, eq.Int32, 8, 512, AckReqFull, 2}, {"atomic", eq.OpSum, eq.Uint16, 8, 520, AckReqFull, 2},
		{"atomic", eq.OpSum, eq.Uint64, 8, 3, AckReqFull, 2}, // misaligned: through the target
		{"fetch", eq.OpSum, eq.Uint64, 8, 0, NoAckReq, 2}, {"fetch", eq.OpBOr, eq.Uint64, 8, 8, NoAckReq, 2},
		{"fetch", eq.OpMax, eq.Float, 4, 256, NoAckReq, 2}, {"fetch", eq.OpLXor, eq.Int64, 16, 16, NoAckReq, 2},
		{"swap", eq.OpSwap, eq.Uint64, 8, 0, NoAckReq, 2}, {"swap", eq.OpCSwap, eq.Uint64, 8, 0, NoAckReq, 2},
		{"swap", eq.OpCSwap, eq.Uint64, 8, 8, NoAckReq, 2}, {"swap", eq.OpMSwap, eq.Uint32, 4, 128, NoAckReq, 2},
		{"swap", eq.OpCSwapGT, eq.Int32, 4, 512, NoAckReq, 2},
		{"fetch", eq.OpSum, eq.Uint64, 8, 0, NoAckReq, 2}, // on PT 8 below: an operation violation
	} {
		pt := PTIndex(4)
		if i == 16 {
			pt = 8
		}
		cmpv := make([]byte, 8)
		binary.LittleEndian.PutUint64(cmpv, binary.LittleEndian.Uint64(src[64+8*i:]))
		var err error
		switch a.kind {
		case "atomic":
			err = Atomic(pm, 64+8*uint64(i), a.n, a.ack, r.peer, pt, 0, a.roff, uint64(200+i), 0, a.op, a.dt)
		case "fetch":
			err = FetchAtomic(gm, 0, pm, 64+8*uint64(i), a.n, r.peer, pt, 0, a.roff, uint64(200+i), 0, a.op, a.dt)
		case "swap":
			err = Swap(gm, 0, pm, 64+8*uint64(i), a.n, r.peer, pt, 0, a.roff, uint64(200+i), 0, cmpv, a.op, a.dt)
		}
		if err != nil {
			return err
		}
		if err := drain(fmt.Sprintf("%s %d", a.kind, i), a.events); err != nil {
			return err
		}
		fmt.Printf("T %s %d old %x\n", a.kind, i, dst[:a.n])
	}
	if err := r.b.Barrier(ctx); err != nil {
		return err
	}
	return r.b.Barrier(ctx)
}

func directWAW(ctx context.Context) error {
	r, err := directSetup(ctx, directOpts)
	if err != nil {
		return err
	}
	defer r.close()
	if r.me == 1 {
		if err := r.b.Barrier(ctx); err != nil {
			return err
		}
		if got := binary.LittleEndian.Uint64(r.heap[0:]); got != 19<<8|0xBB {
			return fmt.Errorf("long then short: %#x at 0, want %#x", got, 19<<8|0xBB)
		}
		if got := binary.LittleEndian.Uint64(r.heap[1<<20-64:]); got != 19<<8|0xCC {
			return fmt.Errorf("eager then short: %#x, want %#x", got, 19<<8|0xCC)
		}
		fmt.Println("T waw ok")
		return nil
	}
	big := bytes.Repeat([]byte{0xAA}, 1<<20+4096)
	small := make([]byte, 8)
	bm, err := r.ni.MDBind(MDSpec{Start: big, EQ: r.q, Options: MDEventSendDisable})
	if err != nil {
		return err
	}
	sm, err := r.ni.MDBind(MDSpec{Start: small, Options: MDVolatile})
	if err != nil {
		return err
	}
	for i := 0; i < 20; i++ {
		// Long: truncated at the entry's end, so it goes through the target.
		if err := Put(bm, 0, 1<<20+4096, AckReqFull, r.peer, 4, 0, 0, 0, 0); err != nil {
			return err
		}
		// A short put while the long one is out (tracked, so not direct) may
		// land before or after its data: the long put is above the NI's
		// MaxWAWOrderedSize (an HCA's RDMA READ, or a pushed put's WRITE, is
		// still moving it). Once its ACK is here its data is in place, and a
		// later put (direct or not) wins.
		binary.LittleEndian.PutUint64(small, uint64(i)<<8|0xBA)
		if err := Put(sm, 0, 8, NoAckReq, r.peer, 4, 0, 0, 0, 0); err != nil {
			return err
		}
		if ev, err := r.q.Wait(ctx); err != nil || ev.Type != eq.EventAck {
			return fmt.Errorf("long put: %+v %v", ev, err)
		}
		binary.LittleEndian.PutUint64(small, uint64(i)<<8|0xBB)
		if err := Put(sm, 0, 8, NoAckReq, r.peer, 4, 0, 0, 0, 0); err != nil {
			return err
		}
		// Eager: 128 bytes at the entry's last 64 (truncated), fire and forget.
		if err := Put(bm, 0, 128, NoAckReq, r.peer, 4, 0, 1<<20-64, 0, 0); err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(small, uint64(i)<<8|0xCC)
		if err := Put(sm, 0, 8, NoAckReq, r.peer, 4, 0, 1<<20-64, 0, 0); err != nil {
			return err
		}
	}
	// A get through the target's engine after everything: once its reply is
	// here, the puts before it have been handled.
	gm, err := r.ni.MDBind(MDSpec{Start: make([]byte, 8), EQ: r.q})
	if err != nil {
		return err
	}
	if err := Get(gm, 0, 8, r.peer, 4, 0, 1<<20-4, 0); err != nil {
		return err
	}
	if ev, err := r.q.Wait(ctx); err != nil || ev.Type != eq.EventReply {
		return fmt.Errorf("get: %+v %v", ev, err)
	}
	// Once the target has counted everything handled, puts elsewhere go direct
	// (the test's verdict needs the direct path to have been open).
	am, err := r.ni.MDBind(MDSpec{Start: make([]byte, 8), EQ: r.q, Options: MDEventSendDisable})
	if err != nil {
		return err
	}
	for i := 0; i < 10000 && r.ni.DirectOps() == 0; i++ {
		if err := Put(am, 0, 8, AckReqFull, r.peer, 4, 0, 2048, 0, 0); err != nil {
			return err
		}
		if ev, err := r.q.Wait(ctx); err != nil || ev.Type != eq.EventAck {
			return fmt.Errorf("put: %+v %v", ev, err)
		}
	}
	return r.b.Barrier(ctx)
}

func directRevokeRole(ctx context.Context) error {
	r, err := directSetup(ctx, directOpts)
	if err != nil {
		return err
	}
	defer r.close()
	word := make([]byte, 8)
	wm, err := r.ni.MDBind(MDSpec{Start: word, EQ: r.q, Options: MDEventSuccessDisable})
	if err != nil {
		return err
	}
	var base uint64
	for _, what := range []string{"unlink", "disable", "ctfree"} {
		if r.me == 1 {
			// Wait for direct puts to arrive, revoke, snapshot; let rank 0 see that
			// its puts no longer land, then compare.
			for {
				v, err := r.ct.Get()
				if err != nil {
					return err
				}
				if v.Success > base+2000 {
					base = v.Success
					break
				}
			}
			cell := r.ct.c.Cell()
			switch what {
			case "unlink":
				err = r.le.Unlink()
			case "disable":
				err = r.ni.PTDisable(4)
			case "ctfree":
				err = r.ct.Free()
			}
			if err != nil {
				return err
			}
			snap := append([]byte(nil), r.heap[:4096]...)
			cellSnap := cell.Load()
			if err := r.b.Barrier(ctx); err != nil { // rank 0 may stop
				return err
			}
			if err := r.b.Barrier(ctx); err != nil { // rank 0 has stopped
				return err
			}
			if what == "ctfree" {
				// The entry stays and counts nowhere: puts still land (through
				// the target); the freed cell must not move.
				if v := cell.Load(); v != cellSnap {
					return fmt.Errorf("ctfree: the freed counter's cell moved from %+v to %+v", cellSnap, v)
				}
			} else if !bytes.Equal(snap, r.heap[:4096]) {
				return fmt.Errorf("%s: the memory changed after the call returned", what)
			}
			fmt.Printf("T revoke %s ok\n", what)
			// Restore for the next round: a new counter and entry, enabled.
			if what == "disable" {
				if err := r.ni.PTEnable(4); err != nil {
					return err
				}
			}
			if what == "unlink" {
				if r.le, err = r.ni.LEAppend(4, LESpec{Start: r.heap[:1<<20], CT: r.ct, UID: UIDAny, Options: directOpts}, PriorityList, 7); err != nil {
					return err
				}
			}
			if err := r.b.Barrier(ctx); err != nil {
				return err
			}
			continue
		}
		// Rank 0: put until rank 1 reaches its first barrier, then stop.
		done := make(chan error, 1)
		go func() { done <- r.b.Barrier(ctx) }()
		var i uint64
	loop:
		for {
			select {
			case err := <-done:
				if err != nil {
					return err
				}
				break loop
			default:
			}
			i++
			binary.LittleEndian.PutUint64(word, i)
			if err := Put(wm, 0, 8, NoAckReq, r.peer, 4, 0, (i*8)%4096, 0, 0); err != nil {
				return err
			}
			if i%64 == 0 {
				r.ni.progressOnce(true)
			}
		}
		// A few more after the call returned: they must not land.
		for j := 0; j < 100; j++ {
			i++
			binary.LittleEndian.PutUint64(word, i)
			if err := Put(wm, 0, 8, NoAckReq, r.peer, 4, 0, (i*8)%4096, 0, 0); err != nil {
				return err
			}
		}
		if err := r.b.Barrier(ctx); err != nil {
			return err
		}
		if err := r.b.Barrier(ctx); err != nil {
			return err
		}
	}
	return nil
}
