package bootstrap

import (
	"bytes"
	"io"
	"strconv"
	"sync"
)

// maxLine bounds the bytes a rank's output buffer holds while waiting for a
// newline; a longer line is written in pieces of that size.
const maxLine = 64 << 10

// sharedOut is one destination (the job's stdout or stderr) shared by all ranks;
// each Write of a whole line is atomic with respect to the others.
type sharedOut struct {
	mu  sync.Mutex
	w   io.Writer
	err error // first write error, reported in JobResult
}

func (s *sharedOut) write(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return // keep draining the rank so it never blocks on a full pipe
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
	}
}

// lineWriter gathers one rank's stream into whole lines, optionally prefixed
// with "[rank] ", so that lines of different ranks never mix mid-line.
type lineWriter struct {
	out    *sharedOut
	prefix []byte // nil when not prefixing
	mu     sync.Mutex
	buf    []byte
}

func newLineWriter(out *sharedOut, rank int, prefix bool) *lineWriter {
	l := &lineWriter{out: out}
	if prefix {
		l.prefix = []byte("[" + strconv.Itoa(rank) + "] ")
	}
	return l
}

// Write buffers p and passes on every complete line; it never fails.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxLine - len(l.buf)
			if len(p) < room {
				l.buf = append(l.buf, p...)
				break
			}
			l.buf = append(l.buf, p[:room]...)
			p = p[room:]
			l.emit(true)
			continue
		}
		l.buf = append(l.buf, p[:i+1]...)
		p = p[i+1:]
		l.emit(false)
	}
	return n, nil
}

// emit writes the buffered bytes with the prefix; partial says the buffer does
// not end a line, in which case a prefixed piece gets a newline of its own.
func (l *lineWriter) emit(partial bool) {
	if len(l.buf) == 0 {
		return
	}
	line := l.buf
	if l.prefix != nil {
		line = make([]byte, 0, len(l.prefix)+len(l.buf)+1)
		line = append(append(line, l.prefix...), l.buf...)
		if partial {
			line = append(line, '\n')
		}
	}
	l.out.write(line)
	l.buf = l.buf[:0]
}

// flush writes a last unterminated line.
func (l *lineWriter) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.emit(true)
}
