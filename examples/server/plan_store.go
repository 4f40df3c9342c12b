package main

// The example's plan documents and Chat are durable: memhost keeps them in
// memory and persists every change, before the change is reported done,
// into plan.db beside the decisions' accord.db (its own bbolt file, so the
// library's store stays the library's). A restart restores the plan
// (blocks, revision, anchors, receipts), the Chat history and the turns
// Chat accepted that have not finished.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/question/planner/memhost"
)

var (
	plansBucket = []byte("plans")
	chatsBucket = []byte("chats")
)

// planStore is plan.db: one JSON value per document in each bucket.
type planStore struct{ db *bolt.DB }

func openPlanStore(path string) (*planStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("plan store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{plansBucket, chatsBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("plan store %s: %w", path, err)
	}
	return &planStore{db: db}, nil
}

func (p *planStore) put(bucket []byte, doc string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return p.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put([]byte(doc), raw) })
}

// restore loads every stored plan and Chat into h; it reports whether doc
// had a stored plan.
func (p *planStore) restore(h *memhost.Host, doc string) (bool, error) {
	found := false
	err := p.db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(plansBucket).ForEach(func(k, v []byte) error {
			var st memhost.DocState
			if err := json.Unmarshal(v, &st); err != nil {
				return fmt.Errorf("plan of %s: %w", k, err)
			}
			h.Docs.Restore(string(k), st)
			found = found || string(k) == doc
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(chatsBucket).ForEach(func(k, v []byte) error {
			var st memhost.ChatState
			if err := json.Unmarshal(v, &st); err != nil {
				return fmt.Errorf("chat of %s: %w", k, err)
			}
			h.Chat.Restore(string(k), st)
			return nil
		})
	})
	return found, err
}

func (p *planStore) Close() error { return p.db.Close() }

// keepPlan makes the host's plans and Chat durable in plan.db beside the
// bbolt store's file (a store without a file keeps them in memory):
// what was stored replaces the sample plan, and every change from now on
// is stored before it is reported done, then pushed to the pages
// (plan_edit.go).
func (a *app) keepPlan(store persist.Store) error {
	if ns, ok := store.(*nodeStore); ok && ns.host != nil {
		a.keepInCluster(ns.host, func(doc string) bool {
			r := ns.router.Load()
			return r != nil && r.Owns(doc)
		})
		return nil
	}
	f, ok := store.(interface{ Path() string })
	if !ok {
		a.host.Docs.Persist(func(doc string, _ memhost.DocState) error { a.feed.notify(doc); return nil })
		a.host.Chat.Persist(func(doc string, _ memhost.ChatState) error { a.feed.notify(doc); return nil })
		return nil
	}
	p, err := openPlanStore(filepath.Join(filepath.Dir(f.Path()), "plan.db"))
	if err != nil {
		return err
	}
	found, err := p.restore(a.host, demoDoc)
	if err == nil && !found {
		err = p.put(plansBucket, demoDoc, a.host.Docs.State(demoDoc))
	}
	if err != nil {
		p.Close()
		return err
	}
	// A change the pages hear of is stored first.
	a.host.Docs.Persist(func(doc string, st memhost.DocState) error {
		if err := p.put(plansBucket, doc, st); err != nil {
			return err
		}
		a.feed.notify(doc)
		return nil
	})
	a.host.Chat.Persist(func(doc string, st memhost.ChatState) error {
		if err := p.put(chatsBucket, doc, st); err != nil {
			return err
		}
		a.feed.notify(doc)
		return nil
	})
	a.plan = p
	return nil
}

// closePlan closes plan.db once nothing changes the plan any more.
func (a *app) closePlan() {
	if a.plan != nil {
		a.host.Docs.Persist(nil)
		a.host.Chat.Persist(nil)
		if err := a.plan.Close(); err != nil {
			a.log.Error("close plan store", "err", err)
		}
	}
}
