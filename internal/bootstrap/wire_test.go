package bootstrap

import (
	"bytes"
	"errors"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	b := newFrame(opGet, 77).u32(3).str("key").val([]byte{1, 2, 3}).u8(9).bytes()
	op, id, payload, err := readFrame(bytes.NewReader(b))
	if err != nil || op != opGet || id != 77 {
		t.Fatalf("readFrame: %d %d %v", op, id, err)
	}
	p := &parser{b: payload}
	if r, k, v, x := p.u32(), p.str(), p.val(), p.u8(); r != 3 || k != "key" || !bytes.Equal(v, []byte{1, 2, 3}) || x != 9 {
		t.Fatalf("fields %d %q %v %d", r, k, v, x)
	}
	if err := p.done(); err != nil {
		t.Fatal(err)
	}
	// Truncated payloads and oversized frames are protocol errors, not panics.
	p = &parser{b: payload[:5]}
	p.u32()
	p.str()
	if !errors.Is(p.done(), ErrProtocol) {
		t.Fatalf("short payload: %v", p.done())
	}
	if _, _, _, err := readFrame(bytes.NewReader([]byte{0x7f, 0, 0, 0})); !errors.Is(err, ErrProtocol) {
		t.Fatalf("oversized frame: %v", err)
	}
}

// FuzzReadFrame feeds arbitrary bytes to the frame reader and every payload
// parser the server and client use: they must fail cleanly, never panic.
func FuzzReadFrame(f *testing.F) {
	f.Add(newFrame(opHello, 0).u32(1).u32(2).str("key").bytes())
	f.Add(newFrame(opPut, 0).str("k").val([]byte("v")).bytes())
	f.Add(newFrame(opReply, 1).u8(stOK).val([]byte("v")).bytes())
	f.Add([]byte{0, 0, 0, 5, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		for {
			_, _, payload, err := readFrame(r)
			if err != nil {
				return
			}
			for _, parse := range []func(p *parser){
				func(p *parser) { p.u32(); p.u32(); p.str() },
				func(p *parser) { p.str(); p.val() },
				func(p *parser) { p.u32(); p.str() },
				func(p *parser) { p.u8(); p.val() },
			} {
				p := &parser{b: payload}
				parse(p)
				p.done()
			}
			replyErr(payload)
		}
	})
}
