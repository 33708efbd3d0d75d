package web

import (
	"context"
	"time"

	"orcr/core/wire"
)

// Test-only doors into Web Push's pieces, for the tests of package web_test (the
// fake push service and the RFC's vector).
var (
	PushKeys       = pushKeys
	EncryptPush    = encryptPush
	NewPushMessage = newPushMessage
	DecodeB64      = decodeB64
	MaxPushPlain   = maxPushPlain
	VAPIDFile      = vapidFile
)

// VAPIDKey loads (or makes) the key in dir: its public point and a header maker.
func VAPIDKey(dir string) ([]byte, func(endpoint, sub string, now time.Time) (string, error), error) {
	v, err := loadVAPID(dir)
	if err != nil {
		return nil, nil, err
	}
	return v.pub, v.header, nil
}

// SetList puts list in place of the kernel's agent list for web.agents (the page
// benchmark's fleet of 1,000 records without 1,000 panes).
func (s *Service) SetList(list func(context.Context, wire.ListParams) ([]wire.Agent, error)) {
	s.list = list
}

// Running reports whether the feature holds a hub or runs its notifier: a server
// whose gateway is off and has no [notify] command holds neither.
func (s *Service) Running() (hub, notifier bool) {
	s.lazyMu.Lock()
	defer s.lazyMu.Unlock()
	return s.hub != nil, s.notifyCancel != nil
}

// SetRing makes the hubs started from now on keep size events and maxBytes of
// frames (the tests' small ring, which a stream's cursor falls behind); it returns
// what puts the defaults back.
func SetRing(size, maxBytes int) (restore func()) {
	oldSize, oldBytes := hubSize, hubBytes
	hubSize, hubBytes = size, maxBytes
	return func() { hubSize, hubBytes = oldSize, oldBytes }
}
