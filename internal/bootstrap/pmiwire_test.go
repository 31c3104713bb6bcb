package bootstrap

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"strings"
	"testing"
	"time"
)

// Replies of real launchers, recorded here: MPICH hydra 4.0.2 (PMI-1 and
// PMI-2) and Slurm 22.05 (PMI-2). They seed the fuzz tests.
var (
	hydraPMI1Replies = []string{
		"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0",
		"cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024",
		"cmd=my_kvsname kvsname=kvs_25425_0_227408887_vm",
		"cmd=put_result rc=0 msg=success",
		"cmd=barrier_out",
		"cmd=get_result rc=0 msg=success value=v2",
		"cmd=get_result rc=-1 msg=key_nokey_not_found value=unknown",
		"cmd=finalize_ack",
		"cmd=initack",
		"cmd=set size=2",
	}
	pmi2Replies = []string{
		"cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank=0;size=2;appnum=0;debugged=FALSE;pmiverbose=FALSE;rc=0;",
		"cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=0;size=2;appnum=-1;debugged=FALSE;pmiverbose=FALSE;",
		"cmd=info-getjobattr-response;found=TRUE;value=(vector,(0,1,1));rc=0;",
		"cmd=kvs-get-response;rc=0;found=TRUE;value=a;;b;",
		"cmd=kvs-get-response;found=FALSE;rc=0;",
		"cmd=kvs-fence-response;rc=0;",
	}
)

func TestParsePMI1(t *testing.T) {
	m, err := parsePMI1("cmd=get_result rc=-1 msg=key_k_not_found value=a=b\r")
	if err != nil || m.cmd != "get_result" || !maps.Equal(m.fields, map[string]string{"rc": "-1", "msg": "key_k_not_found", "value": "a=b"}) {
		t.Fatalf("%v %v", m, err)
	}
	// A token without '=' continues the value before it.
	if m, err := parsePMI1("cmd=abort msg=out of memory"); err != nil || m.fields["msg"] != "out of memory" {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"", "rc=0 cmd=x", "cmd=a cmd=b", "cmd=a k=1 k=2", "cmd=a tok", "cmd=", "cmd=a k=\x00", "cmd=a\tk=1", "=x"} {
		if m, err := parsePMI1(bad); !errors.Is(err, ErrProtocol) {
			t.Errorf("parsePMI1(%q) = %v, %v; want ErrProtocol", bad, m, err)
		}
	}
}

func TestParsePMI2(t *testing.T) {
	m, err := parsePMI2("cmd=kvs-get-response;rc=0;found=TRUE;value=a;;b=c;;;")
	if err != nil || m.cmd != "kvs-get-response" || m.fields["value"] != "a;b=c;" {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"", "cmd=x", "rc=0;cmd=x;", "cmd=x;k=1;k=2;", "cmd=x;cmd=y;", "cmd=x;novalue;", "cmd=x;=v;", "cmd=;"} {
		if m, err := parsePMI2(bad); !errors.Is(err, ErrProtocol) {
			t.Errorf("parsePMI2(%q) = %v, %v; want ErrProtocol", bad, m, err)
		}
	}
	b, err := formatPMI2("kvs-put", "key", "k", "value", "x;y")
	if err != nil || string(b) != "29    cmd=kvs-put;key=k;value=x;;y;" {
		t.Fatalf("%q %v", b, err)
	}
	for hdr, want := range map[string]int{"25    ": 25, "    25": 25, "000025": 25, "  7   ": 7} {
		if n, err := parsePMI2Len([]byte(hdr)); err != nil || n != want {
			t.Errorf("length %q: %d %v", hdr, n, err)
		}
	}
	for _, hdr := range []string{"      ", "+25   ", "-1    ", "2 5   ", "0x10  ", "999999"} {
		if n, err := parsePMI2Len([]byte(hdr)); !errors.Is(err, ErrProtocol) {
			t.Errorf("length %q: %d %v, want ErrProtocol", hdr, n, err)
		}
	}
}

// FuzzParsePMI1 checks that any line parses without panicking and that what
// parses survives formatting and parsing again.
func FuzzParsePMI1(f *testing.F) {
	for _, s := range hydraPMI1Replies {
		f.Add(s)
	}
	f.Add("cmd=abort msg=out of memory")
	f.Fuzz(func(t *testing.T, line string) {
		m, err := parsePMI1(line)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not match ErrProtocol", err)
			}
			return
		}
		again, err := readPMI1(bufio.NewReader(strings.NewReader(m.String())))
		if err != nil || again.cmd != m.cmd || !maps.Equal(again.fields, m.fields) {
			t.Fatalf("%q parsed as %v, formatted as %q, parsed again as %v, %v", line, m, m.String(), again, err)
		}
	})
}

// FuzzParsePMI2 checks the same of PMI-2 message bodies, through the length
// prefix.
func FuzzParsePMI2(f *testing.F) {
	for _, s := range pmi2Replies {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		m, err := parsePMI2(body)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not match ErrProtocol", err)
			}
			return
		}
		b, err := formatPMI2(m.cmd, sortedFields(m.fields)...)
		if err != nil {
			t.Fatal(err)
		}
		again, err := readPMI2(bufio.NewReader(bytes.NewReader(b)))
		if err != nil || again.cmd != m.cmd || !maps.Equal(again.fields, m.fields) {
			t.Fatalf("%q parsed as %v, formatted as %q, parsed again as %v, %v", body, m, b, again, err)
		}
	})
}

// FuzzPMIClient plays a launcher that answers with arbitrary bytes: the
// client must neither panic nor hang past its context, and every error must
// be one of the package's sentinels.
func FuzzPMIClient(f *testing.F) {
	transcript := strings.Join(hydraPMI1Replies[:3], "\n") + "\n" + hydraPMI1Replies[3] + "\n" + hydraPMI1Replies[4] + "\n" + hydraPMI1Replies[5] + "\n"
	f.Add(uint8(1), []byte(transcript))
	f.Add(uint8(3), []byte("cmd=initack\ncmd=set size=2\ncmd=set rank=0\ncmd=set debug=0\n"+transcript))
	var p2 bytes.Buffer
	p2.WriteString("cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n")
	for _, r := range pmi2Replies {
		fmt.Fprintf(&p2, "%-6d%s", len(r), r)
	}
	f.Add(uint8(2), p2.Bytes())
	f.Add(uint8(2), []byte("cmd=response_to_init pmi_version=2 rc=0\n999999"))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		client, server := net.Pipe()
		go io.Copy(io.Discard, server)
		go func() {
			server.Write(data)
			server.Close()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var b *PMI
		var err error
		switch kind % 3 {
		case 0:
			b, err = DialPMI1(ctx, client, -1, 0, 2)
		case 1:
			b, err = DialPMI1(ctx, client, 0, -1, -1)
		default:
			b, err = DialPMI2(ctx, client, 0, "")
		}
		if err == nil {
			if err = b.Put("k", []byte{0, ';', '=', ' ', '\n'}); err == nil {
				if err = b.Fence(ctx); err == nil {
					_, err = b.Get(ctx, b.Size()-1, "k")
				}
			}
			b.Close()
		} else {
			client.Close()
		}
		if err == nil {
			return
		}
		for _, s := range []error{ErrProtocol, ErrLauncherLost, ErrNotSupported, ErrBadEnv, ErrNotFound, ErrInvalidKey, ErrClosed} {
			if errors.Is(err, s) {
				return
			}
		}
		t.Fatalf("error %v matches no sentinel", err)
	})
}
