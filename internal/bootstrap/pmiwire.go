package bootstrap

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The PMI wire formats, parsed and built here and nowhere else, so that the
// fuzz tests cover every byte a launcher can send.
//
// PMI-1 (and the first line of PMI-2) is text, one command per line:
//
//	cmd=NAME key=value key=value\n
//
// Tokens are separated by single spaces; a value runs to the next space. MPICH
// hydra's replies to failed calls carry "msg=..." texts that never hold spaces
// today; a token without '=' is nevertheless kept as part of the value before
// it rather than rejected.
//
// PMI-2 is length-prefixed: six ASCII characters holding the decimal length
// of the rest (hydra right-justifies it, Slurm left-justifies it: both are
// trimmed), then
//
//	cmd=NAME;key=value;key=value;
//
// where ";;" inside a value stands for one ';'. Neither hydra 4.0 nor Slurm
// 22.05 decodes ";;" on input (measured: both store a value cut at the first
// ';'), so this package never sends a ';' in a PMI-2 value: the values it
// stores are base64 text and the abort message has its ';' replaced.

// maxPMILine bounds one PMI-1 line and one PMI-2 message read from the
// launcher: far more than any reply to the commands sent here (a value is at
// most about 1 KiB) and small enough that a babbling peer cannot exhaust memory.
const maxPMILine = 64 << 10

// pmiMsg is one parsed PMI command or reply: its cmd and its other fields.
type pmiMsg struct {
	cmd    string
	fields map[string]string
}

// get returns a field, and whether it is present.
func (m pmiMsg) get(k string) (string, bool) {
	v, ok := m.fields[k]
	return v, ok
}

// String prints the message in PMI-1 form, for error messages.
func (m pmiMsg) String() string { return formatPMI1(m.cmd, sortedFields(m.fields)...) }

// sortedFields returns the fields as key, value pairs in key order.
func sortedFields(f map[string]string) []string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		out = append(out, k, f[k])
	}
	return out
}

// parsePMI1 parses one PMI-1 line (without its newline). The first field must
// be cmd; a field may not appear twice.
func parsePMI1(line string) (pmiMsg, error) {
	line = strings.TrimSuffix(line, "\r")
	for i := 0; i < len(line); i++ {
		if line[i] < ' ' || line[i] == 0x7f {
			return pmiMsg{}, errDetail(ErrProtocol, "PMI-1 line %q holds the control byte %#x", clip(line), line[i])
		}
	}
	m := pmiMsg{fields: map[string]string{}}
	last := ""
	for i, tok := range strings.Split(line, " ") {
		if tok == "" {
			continue
		}
		k, v, ok := strings.Cut(tok, "=")
		if !ok || k == "" {
			if last == "" {
				return pmiMsg{}, errDetail(ErrProtocol, "PMI-1 line %q: token %q is not key=value", clip(line), clip(tok))
			}
			m.fields[last] += " " + tok
			continue
		}
		if i == 0 && k != "cmd" {
			return pmiMsg{}, errDetail(ErrProtocol, "PMI-1 line %q does not start with cmd=", clip(line))
		}
		if k == "cmd" {
			if m.cmd != "" || i != 0 {
				return pmiMsg{}, errDetail(ErrProtocol, "PMI-1 line %q: cmd not first or repeated", clip(line))
			}
			m.cmd = v
			last = ""
			continue
		}
		if _, dup := m.fields[k]; dup {
			return pmiMsg{}, errDetail(ErrProtocol, "PMI-1 line %q: field %q repeated", clip(line), k)
		}
		m.fields[k] = v
		last = k
	}
	if m.cmd == "" {
		return pmiMsg{}, errDetail(ErrProtocol, "PMI-1 line %q has no cmd", clip(line))
	}
	return m, nil
}

// formatPMI1 builds a PMI-1 line (with its newline) from cmd and key, value
// pairs. Callers have checked that no key or value holds a space, '=' or a
// newline (see pmiText).
func formatPMI1(cmd string, kv ...string) string {
	var b strings.Builder
	b.WriteString("cmd=")
	b.WriteString(cmd)
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteByte(' ')
		b.WriteString(kv[i])
		b.WriteByte('=')
		b.WriteString(kv[i+1])
	}
	b.WriteByte('\n')
	return b.String()
}

// parsePMI2 parses the body of one PMI-2 message (after the length prefix).
// The first field must be cmd; ";;" in a value decodes to ';'.
func parsePMI2(body string) (pmiMsg, error) {
	m := pmiMsg{fields: map[string]string{}}
	i, first := 0, true
	for i < len(body) {
		eq := strings.IndexByte(body[i:], '=')
		if eq <= 0 {
			return pmiMsg{}, errDetail(ErrProtocol, "PMI-2 message %q: field at %d is not key=value;", clip(body), i)
		}
		k := body[i : i+eq]
		if strings.IndexByte(k, ';') >= 0 {
			return pmiMsg{}, errDetail(ErrProtocol, "PMI-2 message %q: key %q holds ';'", clip(body), clip(k))
		}
		i += eq + 1
		var v strings.Builder
		for {
			if i >= len(body) {
				return pmiMsg{}, errDetail(ErrProtocol, "PMI-2 message %q: value of %q not ended by ';'", clip(body), k)
			}
			c := body[i]
			i++
			if c != ';' {
				v.WriteByte(c)
				continue
			}
			if i < len(body) && body[i] == ';' {
				v.WriteByte(';')
				i++
				continue
			}
			break
		}
		if first {
			if k != "cmd" {
				return pmiMsg{}, errDetail(ErrProtocol, "PMI-2 message %q does not start with cmd=", clip(body))
			}
			m.cmd = v.String()
			first = false
			continue
		}
		if k == "cmd" {
			return pmiMsg{}, errDetail(ErrProtocol, "PMI-2 message %q: cmd repeated", clip(body))
		}
		if _, dup := m.fields[k]; dup {
			return pmiMsg{}, errDetail(ErrProtocol, "PMI-2 message %q: field %q repeated", clip(body), k)
		}
		m.fields[k] = v.String()
	}
	if first || m.cmd == "" {
		return pmiMsg{}, errDetail(ErrProtocol, "PMI-2 message %q has no cmd", clip(body))
	}
	return m, nil
}

// formatPMI2 builds a PMI-2 message with its 6-character length prefix from cmd
// and key, value pairs; ';' in values is escaped as ";;". Keys must not hold
// '=' or ';'. It fails if the body does not fit the prefix.
func formatPMI2(cmd string, kv ...string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("      cmd=")
	b.WriteString(strings.ReplaceAll(cmd, ";", ";;"))
	b.WriteByte(';')
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(kv[i])
		b.WriteByte('=')
		b.WriteString(strings.ReplaceAll(kv[i+1], ";", ";;"))
		b.WriteByte(';')
	}
	out := b.Bytes()
	n := len(out) - 6
	if n > 999999 {
		return nil, errDetail(ErrValueTooLarge, "PMI-2 message of %d bytes exceeds the 6-digit length prefix", n)
	}
	copy(out, fmt.Sprintf("%-6d", n))
	return out, nil
}

// readPMI1 reads one line of at most maxPMILine bytes and parses it.
func readPMI1(r *bufio.Reader) (pmiMsg, error) {
	line, err := readLineLimited(r, maxPMILine)
	if err != nil {
		return pmiMsg{}, err
	}
	return parsePMI1(line)
}

// readLineLimited reads up to and without the next '\n'. A line longer than
// limit is a protocol error; EOF before the newline is io.ErrUnexpectedEOF
// (io.EOF when nothing at all was read).
func readLineLimited(r *bufio.Reader, limit int) (string, error) {
	var b []byte
	for {
		frag, err := r.ReadSlice('\n')
		if len(b)+len(frag) > limit+1 {
			return "", errDetail(ErrProtocol, "line from the launcher longer than %d bytes", limit)
		}
		b = append(b, frag...)
		switch err {
		case nil:
			return string(b[:len(b)-1]), nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(b) == 0 {
				return "", io.EOF
			}
			return "", io.ErrUnexpectedEOF
		default:
			return "", err
		}
	}
}

// readPMI2 reads one length-prefixed PMI-2 message and parses it.
func readPMI2(r *bufio.Reader) (pmiMsg, error) {
	var hdr [6]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return pmiMsg{}, err
	}
	n, err := parsePMI2Len(hdr[:])
	if err != nil {
		return pmiMsg{}, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return pmiMsg{}, err
	}
	return parsePMI2(string(body))
}

// parsePMI2Len decodes a 6-character length prefix (digits padded with spaces
// on either side) and checks it against maxPMILine.
func parsePMI2Len(hdr []byte) (int, error) {
	s := strings.Trim(string(hdr), " ")
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || s == "" || s[0] == '+' || s[0] == '-' {
		return 0, errDetail(ErrProtocol, "PMI-2 length prefix %q is not a decimal number", hdr)
	}
	if n > maxPMILine {
		return 0, errDetail(ErrProtocol, "PMI-2 message of %d bytes exceeds %d", n, maxPMILine)
	}
	return n, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// pmiText reports whether s can travel as a PMI key or value in either wire
// format: printable ASCII without space, '=' or ';'.
func pmiText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '=' || c == ';' {
			return false
		}
	}
	return true
}

// pmiMessage turns free text (an abort message) into something both wire
// formats carry: printable ASCII, spaces as '_' for PMI-1 where asked, no ';'.
func pmiMessage(s string, noSpace bool) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c == ';' || c == '=':
			b[i] = ','
		case c == ' ' && noSpace:
			b[i] = '_'
		case c < ' ' || c >= 0x7f:
			b[i] = '?'
		}
	}
	return string(b)
}
