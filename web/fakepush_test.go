package web_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/web"
)

// b64 is base64url without padding, as Web Push writes keys and JWTs.
var b64 = base64.RawURLEncoding

// The browser's and the push service's sides of Web Push, as test code: what a
// browser does with a message (RFC 8291 §3.4 with its own private key) and what a
// push service checks of a sender (RFC 8292).

// decryptPush reads an aes128gcm message as the browser does: the sender's public
// key from the header, the ECDH with the subscriber's private key, the same
// derivation, then the record's padding delimiter.
func decryptPush(body []byte, ua *ecdh.PrivateKey, authSecret []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("short aes128gcm header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if rs < 18 {
		return nil, fmt.Errorf("record size %d", rs)
	}
	if len(body) < 21+idlen {
		return nil, errors.New("short key id")
	}
	asPub := body[21 : 21+idlen]
	rec := body[21+idlen:]
	if len(rec) > int(rs) {
		return nil, fmt.Errorf("record of %d bytes over rs %d: a push is one record", len(rec), rs)
	}
	as, err := ecdh.P256().NewPublicKey(asPub)
	if err != nil {
		return nil, fmt.Errorf("sender key: %w", err)
	}
	secret, err := ua.ECDH(as)
	if err != nil {
		return nil, err
	}
	cek, nonce := web.PushKeys(secret, authSecret, ua.PublicKey().Bytes(), asPub, salt)
	blk, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(blk)
	if err != nil {
		return nil, err
	}
	p, err := gcm.Open(nil, nonce, rec, nil)
	if err != nil {
		return nil, fmt.Errorf("decrypt: %w", err)
	}
	p = bytes.TrimRight(p, "\x00")
	if len(p) == 0 || p[len(p)-1] != 0x02 {
		return nil, errors.New("no last-record delimiter")
	}
	return p[:len(p)-1], nil
}

type vapidClaims struct {
	Aud string `json:"aud"`
	Exp int64  `json:"exp"`
	Sub string `json:"sub"`
}

// verifyVAPID checks an Authorization header as a push service does: the scheme,
// the JWT's ES256 signature by the key k, aud = the service's origin, exp in the
// future and at most 24 hours away, a sub.
func verifyVAPID(header, origin string, now time.Time) (vapidClaims, error) {
	var c vapidClaims
	rest, ok := strings.CutPrefix(header, "vapid ")
	if !ok {
		return c, fmt.Errorf("scheme is not vapid: %q", header)
	}
	var t, k string
	for _, part := range strings.Split(rest, ",") {
		kv := strings.SplitN(strings.TrimSpace(part), "=", 2)
		if len(kv) != 2 {
			continue
		}
		switch kv[0] {
		case "t":
			t = kv[1]
		case "k":
			k = kv[1]
		}
	}
	kb, err := web.DecodeB64(k)
	if err != nil || len(kb) != 65 || kb[0] != 4 {
		return c, fmt.Errorf("k is not an uncompressed P-256 point: %q", k)
	}
	parts := strings.Split(t, ".")
	if len(parts) != 3 {
		return c, errors.New("t is not a JWT")
	}
	hb, err := web.DecodeB64(parts[0])
	if err != nil {
		return c, err
	}
	var hdr struct{ Typ, Alg string }
	if err := json.Unmarshal(hb, &hdr); err != nil || hdr.Alg != "ES256" {
		return c, fmt.Errorf("JWT header %s", hb)
	}
	sig, err := web.DecodeB64(parts[2])
	if err != nil || len(sig) != 64 {
		return c, errors.New("ES256 signature is not 64 octets")
	}
	x, y := new(big.Int).SetBytes(kb[1:33]), new(big.Int).SetBytes(kb[33:])
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: x, Y: y}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return c, errors.New("JWT signature does not verify with k")
	}
	cb, err := web.DecodeB64(parts[1])
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(cb, &c); err != nil {
		return c, err
	}
	if c.Aud != origin {
		return c, fmt.Errorf("aud %q, not this service's origin %q", c.Aud, origin)
	}
	exp := time.Unix(c.Exp, 0)
	if !exp.After(now) || exp.Sub(now) > 24*time.Hour {
		return c, fmt.Errorf("exp %v not within 24 h of now", exp)
	}
	if c.Sub == "" {
		return c, errors.New("no sub")
	}
	return c, nil
}

// browserSub is a subscription as a browser makes it: its own ECDH key and auth
// secret, an endpoint on the fake push service.
type browserSub struct {
	id   string
	key  *ecdh.PrivateKey
	auth []byte
}

// pushed is a message the fake push service took, decrypted.
type pushed struct {
	sub     string
	plain   []byte
	ttl     string
	urgency string
	claims  vapidClaims
}

// fakePushService is a push service over TLS: it checks each POST's VAPID header
// against the key the subscription was made with, decrypts the body with the
// subscriber's private key and keeps what it read; gone subscriptions answer 410.
type fakePushService struct {
	t      testing.TB
	srv    *httptest.Server
	appKey []byte // the applicationServerKey the subscriptions were made with

	mu       sync.Mutex
	subs     map[string]*browserSub
	gone     map[string]bool
	got      []pushed
	refused  []string
	received chan struct{}
}

func newFakePushService(t testing.TB, appKey []byte) *fakePushService {
	f := &fakePushService{t: t, appKey: appKey, subs: map[string]*browserSub{}, gone: map[string]bool{}, received: make(chan struct{}, 100)}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// subscribe makes a subscription the way pushManager.subscribe does; the JSON is
// what PushSubscription.toJSON() gives the page.
func (f *fakePushService) subscribe() (string, map[string]any) {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		f.t.Fatal(err)
	}
	auth := make([]byte, 16)
	io.ReadFull(rand.Reader, auth)
	f.mu.Lock()
	id := strconv.Itoa(len(f.subs) + 1)
	f.subs[id] = &browserSub{id: id, key: k, auth: auth}
	f.mu.Unlock()
	ep := f.srv.URL + "/wpush/" + id
	return ep, map[string]any{"endpoint": ep, "expirationTime": nil,
		"keys": map[string]string{"p256dh": b64.EncodeToString(k.PublicKey().Bytes()), "auth": b64.EncodeToString(auth)}}
}

func (f *fakePushService) refuse(w http.ResponseWriter, code int, why string) {
	f.mu.Lock()
	f.refused = append(f.refused, why)
	f.mu.Unlock()
	http.Error(w, why, code)
	f.received <- struct{}{}
}

func (f *fakePushService) serve(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/wpush/")
	if r.Method != http.MethodPost || !ok {
		f.refuse(w, http.StatusNotFound, "not a push endpoint: "+r.Method+" "+r.URL.Path)
		return
	}
	f.mu.Lock()
	sub, gone, appKey := f.subs[id], f.gone[id], f.appKey
	f.mu.Unlock()
	if sub == nil || gone {
		f.refuse(w, http.StatusGone, "subscription "+id+" is gone")
		return
	}
	c, err := verifyVAPID(r.Header.Get("Authorization"), f.srv.URL, time.Now())
	if err != nil {
		f.refuse(w, http.StatusUnauthorized, "vapid: "+err.Error())
		return
	}
	if _, k, _ := strings.Cut(r.Header.Get("Authorization"), "k="); k != b64.EncodeToString(appKey) {
		f.refuse(w, http.StatusForbidden, "vapid k is not the key the subscription was made with")
		return
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "aes128gcm" {
		f.refuse(w, http.StatusBadRequest, "content-encoding "+ce)
		return
	}
	ttl := r.Header.Get("TTL")
	if _, err := strconv.Atoi(ttl); err != nil {
		f.refuse(w, http.StatusBadRequest, "no TTL header")
		return
	}
	urg := r.Header.Get("Urgency")
	switch urg {
	case "", "very-low", "low", "normal", "high":
	default:
		f.refuse(w, http.StatusBadRequest, "urgency "+urg)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8192))
	if len(body) > 4096 {
		f.refuse(w, http.StatusRequestEntityTooLarge, "body over 4096")
		return
	}
	plain, err := decryptPush(body, sub.key, sub.auth)
	if err != nil {
		f.refuse(w, http.StatusBadRequest, "decrypt: "+err.Error())
		return
	}
	f.mu.Lock()
	f.got = append(f.got, pushed{sub: id, plain: plain, ttl: ttl, urgency: urg, claims: c})
	n := len(f.got)
	f.mu.Unlock()
	w.Header().Set("Location", f.srv.URL+"/msg/"+strconv.Itoa(n))
	w.WriteHeader(http.StatusCreated)
	f.received <- struct{}{}
}

func (f *fakePushService) messages() []pushed {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]pushed(nil), f.got...)
}

func (f *fakePushService) refusals() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.refused...)
}

func (f *fakePushService) setKey(k []byte) {
	f.mu.Lock()
	f.appKey = k
	f.mu.Unlock()
}

func (f *fakePushService) unsubscribe(id string) {
	f.mu.Lock()
	f.gone[id] = true
	f.mu.Unlock()
}
