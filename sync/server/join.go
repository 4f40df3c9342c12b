package server

// Joins: the welcome and the catch-up frames of a hello, paced by the
// connection's write pump, and the cache of catch-up frames.

import (
	"strings"
	"sync"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

type pendingJoin struct {
	c       *conn
	have    map[string][]string
	deflate bool
}

// joinCursor is a join in progress: the decisions of the welcome, in its
// order, of which the first next were sent. rest holds those not sent yet.
type joinCursor struct {
	have    map[string][]string
	deflate bool // the hello asked for compressed documents
	ids     []string
	next    int
	rest    map[string]struct{}
}

// Join pacing: at most joinWindow join frames (or about joinWindowBytes)
// wait in a conn's outbox; the write pump asks for more when a quarter
// is left. The window keeps the socket busy while bounding what one
// joiner holds in memory, whatever the size of the document.
const (
	joinWindow      = 32
	joinWindowBytes = 1 << 20
)

// wakeJoins asks the document goroutine to queue more join frames. It
// never blocks.
func (d *document) wakeJoins() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (j *joinCursor) pending(id string) bool {
	if j == nil {
		return false
	}
	_, ok := j.rest[id]
	return ok
}

// join takes a hello; pumpJoins answers it once the group is committed.
func (d *document) join(c *conn, h *wire.Hello) {
	if c.helloSeen {
		c.replyError(c.format, "", "invalid", "hello was already sent")
		return
	}
	c.helloSeen = true
	d.hellos = append(d.hellos, pendingJoin{c: c, have: h.Have, deflate: h.Deflate})
}

// pumpJoins sends the welcomes of the hellos of the group just committed,
// then, to every conn still joining, join frames (each decision's
// document or the changes the member lacks, in the welcome's order) until
// its join window is full. It runs only between groups, when the
// authority holds exactly what is committed, so no join frame shows
// state that is not durable; the frames are built as they are sent, so
// each is as recent as it can be and the changes broadcast to the conn
// meanwhile (skipped by deliver) are part of it.
func (d *document) pumpJoins() {
	var recs []question.Record
	for _, j := range d.hellos {
		if j.c.closed() {
			continue
		}
		if recs == nil {
			recs = d.auth.Records()
		}
		d.joins++
		d.conns[j.c] = d.joins
		cur := &joinCursor{have: j.have, deflate: j.deflate, ids: make([]string, len(recs)), rest: make(map[string]struct{}, len(recs))}
		for i, r := range recs {
			cur.ids[i] = r.ID
			cur.rest[r.ID] = struct{}{}
		}
		d.joining[j.c] = cur
		j.c.joining.Store(true)
		m := j.c.login()
		welcome, ok := d.encode(j.c, &encoded{msg: &wire.Welcome{
			Header: wire.Header{Kind: wire.KindWelcome}, V: wire.Version, Doc: d.id,
			Member: m.Login, Write: m.Write, Records: recs,
		}})
		if !ok {
			// Its records exceed one frame's limits (logged by encode).
			j.c.replyError(j.c.format, "", string(question.Unavailable), "the document's records do not fit in one welcome frame")
			j.c.close()
			continue
		}
		d.presence.add(j.c, func() { j.c.sendPaced(welcome) })
	}
	d.hellos = nil
	for c, cur := range d.joining {
		for cur.next < len(cur.ids) && c.pacedRoom() > 0 {
			id := cur.ids[cur.next]
			cur.next++
			delete(cur.rest, id)
			e := d.catchUp(id, cur.have[id])
			if cur.deflate {
				e = d.catch[id].deflated(e, d.s.deflaters)
			}
			if n := d.sendPaced(c, e); n > 0 {
				if _, ok := e.msg.(*wire.Doc); ok {
					d.s.metrics.catchUp("doc", n)
				} else {
					d.s.metrics.catchUp("changes", n)
				}
			}
		}
		if cur.next == len(cur.ids) {
			delete(d.joining, c)
			c.joining.Store(false)
		}
	}
}

// sendPaced queues a join frame and returns its size.
func (d *document) sendPaced(c *conn, e *encoded) int {
	f, ok := d.encode(c, e)
	if !ok {
		return 0
	}
	c.sendPaced(f)
	return len(f.data)
}

// encode returns e's frame in c's format; false, logged, if it cannot be
// encoded within a frame's limits.
func (d *document) encode(c *conn, e *encoded) (frame, bool) {
	f, err := e.frame(c.format)
	if err != nil {
		d.s.opts.Logger.Error("encode", "doc", d.id, "kind", e.msg.FrameKind(), "err", err)
		return frame{}, false
	}
	return f, true
}

// catchUp returns the frame that brings a replica holding have up to the
// accepted document: the missing changes, or the whole document when that
// is smaller or the replica's heads are unknown here. Frames are cached
// per decision at its current heads (which name its content exactly), so
// reconnecting replicas holding the same heads, and every joiner that
// holds none, share one frame, derived and encoded once.
func (d *document) catchUp(id string, have []string) *encoded {
	_, cur, err := d.auth.Draft(id)
	if err != nil {
		return &encoded{msg: &wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: id}}
	}
	at := cur.String()
	e := d.catch[id]
	if e == nil || e.heads != at {
		saved, _ := d.auth.Save(id)
		e = &catchEntry{heads: at, doc: &encoded{msg: &wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: id, Doc: saved, Heads: heads(cur)}},
			size: len(saved)}
		if d.catch == nil {
			d.catch = map[string]*catchEntry{}
		}
		d.catch[id] = e
	}
	if have == nil {
		return e.doc
	}
	key := strings.Join(have, ",")
	if f, ok := e.byHave[key]; ok {
		return f
	}
	f := e.doc
	if h, err := parseHeads(have); err == nil {
		if h.Equal(cur) {
			f = &encoded{msg: &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Heads: heads(cur)}}
		} else if ch, err := d.auth.ChangesSince(id, h); err == nil && len(ch) <= e.size {
			f = &encoded{msg: &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Changes: ch, Heads: heads(cur)}}
		}
	}
	if len(e.byHave) >= maxCatchUps {
		clear(e.byHave) // a crowd of distinct heads: start over
	}
	if e.byHave == nil {
		e.byHave = map[string]*encoded{}
	}
	e.byHave[key] = f
	return f
}

// catchEntry caches a decision's catch-up frames at one set of heads.
type catchEntry struct {
	heads  string
	doc    *encoded // the whole accepted document
	size   int      // bytes of the saved document
	byHave map[string]*encoded
	docZ   *encoded // doc, compressed if that is smaller
}

// deflated returns the frame to send for f to a replica that asked for
// compressed documents: f itself unless it is the whole document and
// DEFLATE makes it smaller. The compressor comes from the server's pool
// (newDeflaters).
func (e *catchEntry) deflated(f *encoded, zs *sync.Pool) *encoded {
	if e == nil || f != e.doc {
		return f
	}
	if e.docZ == nil {
		m := e.doc.msg.(*wire.Doc)
		e.docZ = e.doc
		z := zs.Get().(*wire.Deflater)
		small := z.Deflate(m.Doc)
		zs.Put(z)
		if len(small) < len(m.Doc) {
			e.docZ = &encoded{msg: &wire.Doc{Header: m.Header, ID: m.ID, Doc: small, Heads: m.Heads, Deflated: true}}
		}
	}
	return e.docZ
}

// newDeflaters returns the pool of a server's DEFLATE compressors. A
// compressor holds about 800 KB of state: one per open document would
// outweigh everything else the document keeps (its decisions, its
// connections), while only the documents sending a join's catch-up at
// this moment use one.
func newDeflaters() *sync.Pool {
	return &sync.Pool{New: func() any { return new(wire.Deflater) }}
}

// maxCatchUps bounds the frames cached per decision for distinct heads a
// replica may hold.
const maxCatchUps = 8
