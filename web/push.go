package web

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"orcr/core"
	"orcr/core/wire"
	webapi "orcr/web/api"
)

// Web Push to paired browsers: each browser session keeps at most one subscription
// (the last its page posted), stored in the feature's bucket under the session's
// name; it goes with the session (unpaired, revoked, expired) and when the push
// service answers 404 or 410.

const bucketPush = "push"

// Bounds of push delivery.
const (
	// pushTTL is how long a push service keeps a message for a browser that is
	// offline: past an hour "X is blocked" is more likely stale than news.
	pushTTL = time.Hour
	// pushTimeout bounds one POST to a push service.
	pushTimeout = 10 * time.Second
	// maxEndpoint bounds a subscription's endpoint URL.
	maxEndpoint = 2048
	// defaultPushSubject is the VAPID sub claim when none is configured.
	defaultPushSubject = "mailto:orcr@localhost"
)

// pushSub is a stored subscription.
type pushSub struct {
	Device   string    `json:"device"` // the session's name
	Endpoint string    `json:"endpoint"`
	P256dh   string    `json:"p256dh"`
	Auth     string    `json:"auth"`
	At       time.Time `json:"at"`
}

// subscriptionJSON is what PushSubscription.toJSON() gives the page.
type subscriptionJSON struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// pusher holds the subscriptions and the VAPID key (made on first use).
type pusher struct {
	home   string
	sub    string
	client *http.Client
	log    interface {
		Warn(string, ...any)
		Info(string, ...any)
	}

	keyOnce sync.Once
	key     *vapid
	keyErr  error

	mu    sync.Mutex
	store core.Buckets
	subs  map[string]pushSub // by device
}

func (p *pusher) vapid() (*vapid, error) {
	p.keyOnce.Do(func() { p.key, p.keyErr = loadVAPID(p.home) })
	return p.key, p.keyErr
}

func (p *pusher) load(ctx context.Context, b core.Buckets) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.store, p.subs = b, map[string]pushSub{}
	return b.Scan(ctx, bucketPush, func(k string, v []byte) bool {
		var s pushSub
		if json.Unmarshal(v, &s) == nil && s.Endpoint != "" {
			p.subs[k] = s
		}
		return true
	})
}

// checkSubscription validates what a page posted: an https endpoint, a P-256 point
// and a 16-octet auth secret.
func checkSubscription(s subscriptionJSON) error {
	if s.Endpoint == "" || len(s.Endpoint) > maxEndpoint {
		return wire.Errorf(wire.CodeInvalidParams, "a push subscription needs an endpoint of at most %d bytes", maxEndpoint)
	}
	u, err := url.Parse(s.Endpoint)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return wire.Errorf(wire.CodeInvalidParams, "push endpoint %.100q: push services are https URLs", s.Endpoint)
	}
	k, err := decodeB64(s.Keys.P256dh)
	if err == nil {
		_, err = ecdh.P256().NewPublicKey(k)
	}
	if err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "push subscription keys.p256dh is not a P-256 public key (base64url)")
	}
	if a, err := decodeB64(s.Keys.Auth); err != nil || len(a) != 16 {
		return wire.Errorf(wire.CodeInvalidParams, "push subscription keys.auth is not a 16-byte secret (base64url)")
	}
	return nil
}

func (p *pusher) put(ctx context.Context, device string, s subscriptionJSON) error {
	if err := checkSubscription(s); err != nil {
		return err
	}
	rec := pushSub{Device: device, Endpoint: s.Endpoint, P256dh: s.Keys.P256dh, Auth: s.Keys.Auth, At: time.Now().UTC().Truncate(time.Second)}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.store == nil {
		return wire.Errorf(wire.CodeUnavailable, "the web feature has not started")
	}
	if err := p.store.Put(ctx, bucketPush, device, b); err != nil {
		return fmt.Errorf("store push subscription: %w", err)
	}
	p.subs[device] = rec
	return nil
}

// drop forgets a device's subscription (unpaired, revoked, gone at the service).
func (p *pusher) drop(ctx context.Context, device string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.subs[device]; !ok {
		return
	}
	delete(p.subs, device)
	if p.store != nil {
		_ = p.store.Delete(ctx, bucketPush, device)
	}
}

// dropIf forgets a device's subscription if it is still the one at endpoint.
func (p *pusher) dropIf(ctx context.Context, device, endpoint string) {
	p.mu.Lock()
	s, ok := p.subs[device]
	p.mu.Unlock()
	if ok && s.Endpoint == endpoint {
		p.drop(ctx, device)
	}
}

func (p *pusher) has(device string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.subs[device]
	return ok
}

func (p *pusher) all() []pushSub {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]pushSub, 0, len(p.subs))
	for _, s := range p.subs {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out
}

// pushPayload is what the page's service worker gets: enough to show a
// notification and open the page on a tap.
type pushPayload struct {
	Kind  string `json:"kind"`
	Title string `json:"title"`
	Body  string `json:"body"`
	Seq   uint64 `json:"seq"`
	Tag   string `json:"tag"` // one notification per agent or run: a newer one replaces it
}

func payloadOf(n Notice) []byte {
	tag := n.Kind
	if n.Event.Agent != nil {
		tag += ":" + n.Event.Agent.Path
	} else if r, ok := n.Event.Data["run"].(string); ok {
		tag += ":" + r
	}
	pl := pushPayload{Kind: n.Kind, Title: n.Title, Body: n.Body, Seq: n.Event.Seq, Tag: tag}
	for {
		b, _ := json.Marshal(pl)
		if len(b) <= maxPushPlain || pl.Body == "" && len(pl.Title) < 64 {
			return b
		}
		// Too long for one push: the body, then the title, shortened (by bytes, kept
		// valid UTF-8 by the JSON encoder's replacement of a cut rune).
		if pl.Body != "" {
			pl.Body = trimRunes(pl.Body, len(pl.Body)/2)
		} else {
			pl.Title = trimRunes(pl.Title, len(pl.Title)/2)
		}
	}
}

func trimRunes(s string, n int) string {
	r := []rune(s)
	if n >= len(r) {
		n = len(r) / 2
	}
	return string(r[:n]) + "…"
}

// urgencyOf is the RFC 8030 Urgency of a kind: what waits on the user is high.
func urgencyOf(kind string) string {
	switch kind {
	case KindBlocked, KindRunAsks:
		return "high"
	}
	return "normal"
}

// send pushes n to every subscription whose session is still valid; alive says
// whether a device's session still stands.
func (p *pusher) send(ctx context.Context, n Notice, alive func(device string) bool) {
	subs := p.all()
	if len(subs) == 0 {
		return
	}
	v, err := p.vapid()
	if err != nil {
		p.log.Warn("push: no VAPID key", "err", err)
		return
	}
	body := payloadOf(n)
	var wg sync.WaitGroup
	for _, s := range subs {
		if !alive(s.Device) {
			p.drop(ctx, s.Device)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			gone, err := p.post(ctx, v, s, body, urgencyOf(n.Kind))
			if gone {
				p.dropIf(ctx, s.Device, s.Endpoint)
				p.log.Info("push: subscription gone, dropped", "device", s.Device)
				return
			}
			if err != nil {
				p.log.Warn("push: not delivered", "device", s.Device, "kind", n.Kind, "seq", n.Event.Seq, "err", err)
			}
		}()
	}
	wg.Wait()
}

// post sends one message; gone is the push service's 404 or 410 (the subscription
// expired or was unsubscribed).
func (p *pusher) post(ctx context.Context, v *vapid, s pushSub, plain []byte, urgency string) (gone bool, err error) {
	ua, err := decodeB64(s.P256dh)
	if err != nil {
		return true, err
	}
	auth, err := decodeB64(s.Auth)
	if err != nil {
		return true, err
	}
	msg, err := newPushMessage(plain, ua, auth)
	if err != nil {
		return true, err
	}
	authz, err := v.header(s.Endpoint, p.sub, time.Now())
	if err != nil {
		return true, err
	}
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint, bytes.NewReader(msg))
	if err != nil {
		return true, err
	}
	req.Header.Set("Authorization", authz)
	req.Header.Set("Content-Encoding", "aes128gcm")
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("TTL", fmt.Sprint(int(pushTTL.Seconds())))
	req.Header.Set("Urgency", urgency)
	resp, err := p.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	why, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return true, nil
	case resp.StatusCode/100 != 2:
		return false, fmt.Errorf("push service answered %s: %.200s", resp.Status, bytes.TrimSpace(why))
	}
	return false, nil
}

// pushKey serves GET /push/key: the VAPID public key the page subscribes with.
func (g *gateway) pushKey(w http.ResponseWriter, r *http.Request) {
	if _, ok := g.authenticate(w, r); !ok {
		return
	}
	v, err := g.s.push.vapid()
	if err != nil {
		writeError(w, wire.Errorf(wire.CodeUnavailable, "web push is unavailable: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]string{"key": b64.EncodeToString(v.pub)})
}

// pushSubscribe serves POST /push/subscribe (the page's PushSubscription JSON) and
// POST /push/unsubscribe: a paired browser's own subscription.
func (g *gateway) pushSubscribe(w http.ResponseWriter, r *http.Request) {
	c, ok := g.authenticate(w, r)
	if !ok {
		return
	}
	if c.kind != webapi.KindSession {
		writeError(w, wire.Errorf(wire.CodePermission, "push subscriptions belong to paired browsers (orcr web pair), not to bearer tokens"))
		return
	}
	if r.PathValue("op") == "unsubscribe" {
		g.s.push.drop(r.Context(), c.name)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var s subscriptionJSON
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<10)).Decode(&s); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeError(w, wire.Errorf(wire.CodeLineTooLong, "a push subscription over 8 KiB refused"))
			return
		}
		writeError(w, wire.Errorf(wire.CodeInvalidParams, "a push subscription is PushSubscription.toJSON(): %v", err))
		return
	}
	if err := g.s.push.put(r.Context(), c.name, s); err != nil {
		writeError(w, err)
		return
	}
	g.s.log.Info("push: browser subscribed", "device", c.name)
	w.WriteHeader(http.StatusNoContent)
}
