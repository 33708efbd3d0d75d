package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"orcr/core"
	"orcr/core/wire"
	webapi "orcr/web/api"
)

// The feature's buckets.
const bucketTokens = "tokens"

// Bounds of the credentials.
const (
	// pairTTL is how long a pairing code is good for; it is single-use within it.
	pairTTL = 5 * time.Minute
	// sessionTTL is a paired browser's default lifetime.
	sessionTTL = 30 * 24 * time.Hour
	// maxPending bounds the pairing codes waiting at once.
	maxPending = 64
	// maxTokens bounds the tokens and sessions kept.
	maxTokens = 1000
	// usedEvery is how often a token's last use is written back.
	usedEvery = time.Minute
	// tokenPrefix starts every secret: a secret pasted into a log is recognisable.
	tokenPrefix = "orcr_"
)

// record is a token as stored: the hash of its secret, never the secret.
type record struct {
	webapi.Token
	Hash string `json:"hash"` // hex sha256 of the secret
}

// cred is the credential a request authenticated with.
type cred struct {
	name, scope, kind string
}

// pairing is a pending pairing code.
type pairing struct {
	scope   string
	ttl     time.Duration
	expires time.Time
}

// auth holds the tokens (in memory, backed by the feature's bucket) and the pending
// pairing codes (in memory only: a restart voids them, which a code living five
// minutes can afford).
type auth struct {
	mu      sync.Mutex
	store   core.Buckets
	tokens  map[string]*record // by name
	pending map[string]pairing // by hex sha256 of the code
	now     func() time.Time
}

func newAuth() *auth {
	return &auth{tokens: map[string]*record{}, pending: map[string]pairing{}, now: time.Now}
}

// load reads the stored tokens.
func (a *auth) load(ctx context.Context, b core.Buckets) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.store = b
	var bad error
	err := b.Scan(ctx, bucketTokens, func(k string, v []byte) bool {
		var r record
		if err := json.Unmarshal(v, &r); err != nil {
			bad = fmt.Errorf("web token %q: %w", k, err)
			return true
		}
		a.tokens[r.Name] = &r
		return true
	})
	if err != nil {
		return fmt.Errorf("load web tokens: %w", err)
	}
	return bad
}

func hashOf(secret string) string {
	s := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(s[:])
}

func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) }) // compiled on first use: every CLI process initialises this package

func checkScope(s string) error {
	if s != webapi.ScopeRead && s != webapi.ScopeAct {
		return wire.Errorf(wire.CodeInvalidParams, "scope %q: use read (no method that changes anything) or act", s)
	}
	return nil
}

// create makes a credential and stores its hash; the secret is returned once.
func (a *auth) create(ctx context.Context, name, kind, scope string, ttl time.Duration, device string) (webapi.Token, string, error) {
	if err := checkScope(scope); err != nil {
		return webapi.Token{}, "", err
	}
	if ttl < 0 {
		return webapi.Token{}, "", wire.Errorf(wire.CodeInvalidParams, "a token's ttl must not be negative")
	}
	secret, err := newSecret()
	if err != nil {
		return webapi.Token{}, "", err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.store == nil {
		return webapi.Token{}, "", wire.Errorf(wire.CodeUnavailable, "the web feature has not started")
	}
	if name == "" {
		name = a.freeName(kind)
	}
	if !validName().MatchString(name) {
		return webapi.Token{}, "", wire.Errorf(wire.CodeInvalidParams,
			"token name %q: use letters, digits, '.', '-' and '_' (at most 64), starting with a letter or digit", name)
	}
	if _, taken := a.tokens[name]; taken {
		return webapi.Token{}, "", wire.Errorf(wire.CodeNameTaken, "a web token named %q exists; remove it first (orcr web token rm %s) or pick another name", name, name)
	}
	if len(a.tokens) >= maxTokens {
		return webapi.Token{}, "", wire.Errorf(wire.CodeInvalidParams, "%d web tokens exist, the most kept; remove some (orcr web token ls, rm)", len(a.tokens))
	}
	now := a.now().UTC().Truncate(time.Second)
	r := &record{Token: webapi.Token{Name: name, Kind: kind, Scope: scope, CreatedAt: now, Device: device}, Hash: hashOf(secret)}
	if ttl > 0 {
		exp := now.Add(ttl)
		r.ExpiresAt = &exp
	}
	if err := a.put(ctx, r); err != nil {
		return webapi.Token{}, "", err
	}
	a.tokens[name] = r
	return r.Token, secret, nil
}

func (a *auth) freeName(kind string) string {
	base := "token"
	if kind == webapi.KindSession {
		base = "browser"
	}
	for i := 1; ; i++ {
		n := fmt.Sprintf("%s-%d", base, i)
		if _, taken := a.tokens[n]; !taken {
			return n
		}
	}
}

func (a *auth) put(ctx context.Context, r *record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := a.store.Put(ctx, bucketTokens, r.Name, b); err != nil {
		return fmt.Errorf("store web token: %w", err)
	}
	return nil
}

// remove revokes a credential: the next request with it is refused.
func (a *auth) remove(ctx context.Context, name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.tokens[name]; !ok {
		return wire.Errorf(wire.CodeNotFound, "no web token or paired browser named %q; see orcr web token ls", name)
	}
	if err := a.store.Delete(ctx, bucketTokens, name); err != nil && !errors.Is(err, wire.ErrNotFound) {
		return fmt.Errorf("remove web token: %w", err)
	}
	delete(a.tokens, name)
	return nil
}

// list returns the credentials in name order; expired ones are dropped on the way.
func (a *auth) list(ctx context.Context) []webapi.Token {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dropExpiredLocked(ctx)
	out := make([]webapi.Token, 0, len(a.tokens))
	for _, r := range a.tokens {
		out = append(out, r.Token)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (a *auth) dropExpiredLocked(ctx context.Context) {
	now := a.now()
	for n, r := range a.tokens {
		if r.ExpiresAt != nil && !now.Before(*r.ExpiresAt) {
			_ = a.store.Delete(ctx, bucketTokens, n)
			delete(a.tokens, n)
		}
	}
}

// alive reports whether a credential stands: stored and not expired.
func (a *auth) alive(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.tokens[name]
	return ok && (r.ExpiresAt == nil || a.now().Before(*r.ExpiresAt))
}

// count is the number of credentials of a kind.
func (a *auth) count(kind string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, r := range a.tokens {
		if r.Kind == kind {
			n++
		}
	}
	return n
}

// check finds the credential a secret is: every stored hash is compared in constant
// time (and every one is compared, so the time says nothing of which matched).
func (a *auth) check(ctx context.Context, secret string) (cred, bool) {
	if !strings.HasPrefix(secret, tokenPrefix) || len(secret) > 128 {
		return cred{}, false
	}
	h := []byte(hashOf(secret))
	a.mu.Lock()
	defer a.mu.Unlock()
	var found *record
	for _, r := range a.tokens {
		if subtle.ConstantTimeCompare(h, []byte(r.Hash)) == 1 {
			found = r
		}
	}
	if found == nil {
		return cred{}, false
	}
	now := a.now()
	if found.ExpiresAt != nil && !now.Before(*found.ExpiresAt) {
		return cred{}, false
	}
	if found.LastUsed == nil || now.Sub(*found.LastUsed) >= usedEvery {
		t := now.UTC().Truncate(time.Second)
		found.LastUsed = &t
		if a.store != nil {
			_ = a.put(ctx, found) // best effort: a failed write only loses the time
		}
	}
	return cred{name: found.Name, scope: found.Scope, kind: found.Kind}, true
}

// pair makes a pairing code: random, single-use, good for pairTTL.
func (a *auth) pair(scope string, ttl time.Duration) (string, time.Time, error) {
	if scope == "" {
		scope = webapi.ScopeAct
	}
	if err := checkScope(scope); err != nil {
		return "", time.Time{}, err
	}
	if ttl <= 0 {
		ttl = sessionTTL
	}
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", time.Time{}, fmt.Errorf("random pairing code: %w", err)
	}
	code := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	for k, p := range a.pending {
		if !now.Before(p.expires) {
			delete(a.pending, k)
		}
	}
	if len(a.pending) >= maxPending {
		return "", time.Time{}, wire.Errorf(wire.CodeInvalidParams, "%d pairing codes wait already; use one or let them expire (%s)", len(a.pending), pairTTL)
	}
	exp := now.Add(pairTTL)
	a.pending[hashOf(code)] = pairing{scope: scope, ttl: ttl, expires: exp}
	return code, exp, nil
}

// redeem spends a pairing code (once) for a browser session: its secret.
func (a *auth) redeem(ctx context.Context, code, device string) (webapi.Token, string, error) {
	h := hashOf(code)
	a.mu.Lock()
	p, ok := a.pending[h]
	delete(a.pending, h)
	a.mu.Unlock()
	if !ok || !a.now().Before(p.expires) {
		return webapi.Token{}, "", errors.New("this pairing link was used already or has expired; run orcr web pair again")
	}
	return a.create(ctx, "", webapi.KindSession, p.scope, p.ttl, device)
}
