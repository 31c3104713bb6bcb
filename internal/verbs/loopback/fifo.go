package loopback

// fifo is a growable ring of T whose slots are reused, so a queue that has reached its
// working size stops allocating. The zero value is an empty queue.
type fifo[T any] struct {
	buf     []T
	head, n int
}

// len returns the number of queued elements.
func (f *fifo[T]) len() int { return f.n }

// push appends a slot and returns it; the slot keeps whatever an earlier use left in it,
// so callers overwrite every field (reusing slices' storage as they wish).
func (f *fifo[T]) push() *T {
	if f.n == len(f.buf) {
		size := 2 * len(f.buf)
		if size == 0 {
			size = 8
		}
		nb := make([]T, size)
		for i := 0; i < f.n; i++ {
			nb[i] = f.buf[(f.head+i)%len(f.buf)]
		}
		// Keep the reusable storage of the slots that were not live, too.
		for i := f.n; i < len(f.buf); i++ {
			nb[i] = f.buf[(f.head+i)%len(f.buf)]
		}
		f.buf, f.head = nb, 0
	}
	i := (f.head + f.n) % len(f.buf)
	f.n++
	return &f.buf[i]
}

// front returns the oldest element; the queue must not be empty.
func (f *fifo[T]) front() *T { return &f.buf[f.head] }

// pop removes the oldest element.
func (f *fifo[T]) pop() {
	f.head++
	if f.head == len(f.buf) {
		f.head = 0
	}
	f.n--
}
