package tests

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Node is one element of a test script: its name, its attributes in document order
// (the order matters: type= before md_data= decides how the data is read), its
// element children and the line it starts on.
type Node struct {
	Name     string
	Attrs    []xml.Attr
	Children []*Node
	Text     string // the character data directly inside (the text of desc)
	Line     int
}

// Script is a parsed test file.
type Script struct {
	Path string
	Root *Node
}

// ScriptError is a broken script: bad XML, an unknown element or attribute, or a
// value that cannot be read. It carries the file and line.
type ScriptError struct {
	Path string
	Line int
	Msg  string
}

// Error formats the error as "file:line: message".
func (e *ScriptError) Error() string { return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg) }

// ParseFile reads and parses the script at path.
func ParseFile(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses a script and checks every element and attribute name against the
// vocabulary, so that a typo is reported with its line before anything runs.
func Parse(path string, data []byte) (*Script, error) {
	lines := newlineIndex(data)
	lineAt := func(off int64) int {
		return 1 + sort.Search(len(lines), func(i int) bool { return int64(lines[i]) >= off })
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	var stack []*Node
	var root *Node
	for {
		off := d.InputOffset()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			line := lineAt(d.InputOffset())
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				line = se.Line
			}
			return nil, &ScriptError{path, line, "bad XML: " + err.Error()}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &Node{Name: t.Name.Local, Attrs: append([]xml.Attr(nil), t.Attr...), Line: lineAt(off + 1)}
			if err := checkNode(n); err != nil {
				return nil, &ScriptError{path, n.Line, err.Error()}
			}
			if len(stack) == 0 {
				if root != nil {
					return nil, &ScriptError{path, n.Line, "more than one root element"}
				}
				root = n
			} else {
				p := stack[len(stack)-1]
				p.Children = append(p.Children, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].Text += string(t)
			}
		}
	}
	if root == nil {
		return nil, &ScriptError{path, 1, "no root element"}
	}
	if root.Name != "test" {
		return nil, &ScriptError{path, root.Line, fmt.Sprintf("root element is <%s>, want <test>", root.Name)}
	}
	return &Script{Path: path, Root: root}, nil
}

// newlineIndex returns the offsets of the newlines of data.
func newlineIndex(data []byte) []int {
	var idx []int
	for i, c := range data {
		if c == '\n' {
			idx = append(idx, i)
		}
	}
	return idx
}

func checkNode(n *Node) error {
	if _, ok := elements[n.Name]; !ok {
		return fmt.Errorf("unknown element <%s>", n.Name)
	}
	if n.Name == "ifdef" {
		// ifdef names optional features: an unknown one means "not defined" (the
		// children are skipped), not a broken script.
		return nil
	}
	for _, a := range n.Attrs {
		if a.Name.Space != "" {
			return fmt.Errorf("<%s>: unknown attribute %s:%s", n.Name, a.Name.Space, a.Name.Local)
		}
		if _, ok := attributes[a.Name.Local]; !ok {
			return fmt.Errorf("<%s>: unknown attribute %q", n.Name, a.Name.Local)
		}
	}
	return nil
}

// Desc returns the text of the script's desc element, or "".
func (s *Script) Desc() string {
	for _, c := range s.Root.Children {
		if c.Name == "desc" {
			return strings.Join(strings.Fields(c.Text), " ")
		}
	}
	return ""
}

func words(s string) map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(s) {
		m[w] = struct{}{}
	}
	return m
}

// elements is the vocabulary of element names.
var elements = words(`test desc comment arg_check if else ifdef repeat threads msleep get_time barrier
	ompi_rt set check subtest
	ptl ptl_ni ptl_pt ptl_md ptl_le ptl_me ptl_eq ptl_ct
	ptl_init ptl_fini ptl_ni_init ptl_ni_fini ptl_ni_status ptl_ni_handle
	ptl_pt_alloc ptl_pt_free ptl_pt_disable ptl_pt_enable ptl_get_id ptl_get_uid
	ptl_md_bind ptl_md_release ptl_le_append ptl_le_unlink ptl_le_search
	ptl_me_append ptl_me_unlink ptl_me_search
	ptl_eq_alloc ptl_eq_free ptl_eq_get ptl_eq_wait ptl_eq_poll
	ptl_ct_alloc ptl_ct_free ptl_ct_get ptl_ct_wait ptl_ct_poll ptl_ct_set ptl_ct_inc ptl_ct_cancel_trig
	ptl_put ptl_get ptl_atomic ptl_atomic_sync ptl_fetch ptl_swap
	ptl_trig_put ptl_trig_get ptl_trig_atomic ptl_trig_fetch ptl_trig_swap ptl_trig_ct_inc ptl_trig_ct_set
	ptl_start_bundle ptl_end_bundle ptl_handle_is_equal ptl_set_map ptl_get_map`)

// limitNames are the ptl_ni_limits_t fields that desired_* and actual_* name.
var limitNames = strings.Fields(`max_entries max_unexpected_headers max_over max_mds max_eqs max_cts
	max_pt_index max_iovecs max_list_size max_triggered_ops max_msg_size max_atomic_size
	max_fetch_atomic_size max_waw_ordered_size max_war_ordered_size max_volatile_size features`)

// attributes is the vocabulary of attribute names.
var attributes = func() map[string]struct{} {
	m := words(`version ret err ptr count thread_id iface ni_opt pid uid ni_handle reg status handle
		pt_opt pt_index list iov_base iovec_len
		md_start md_length md_opt md_handle md_data
		le_start le_length le_opt le_data search_op
		me_start me_length me_match me_ignore me_opt me_min_free me_data
		time which which_ptr eq_count eq_handle
		event_type event_nid event_pid event_rank event_pt_index event_uid event_match event_rlength
		event_mlength event_offset event_start event_user_ptr event_hdr_data event_ni_fail
		event_atom_op event_atom_type event_ptl_list
		ct_handle ct_event_success ct_event_failure ct_test trig_ct_handle
		length offset operand type loc_offset loc_get_offset loc_put_offset rem_offset
		atom_op atom_type match hdr_data get_md_handle put_md_handle user_ptr ack_req
		handle1 handle2 threshold rank target_id get_map_size`)
	for _, l := range limitNames {
		m["desired_"+l] = struct{}{}
		m["actual_"+l] = struct{}{}
	}
	return m
}()
