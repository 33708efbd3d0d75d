package web

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Web Push, written here from its RFCs with the standard library's crypto only:
// the message is encrypted for the browser per RFC 8291 (ECDH P-256 with the
// subscription's key, HKDF-SHA-256 with its auth secret) in the aes128gcm content
// coding of RFC 8188, and the push service is shown who sends it per RFC 8292
// (VAPID: an ES256 JWT signed with the server's key, whose public half the browser
// subscribed with).

// b64 is the base64url without padding that every Web Push key and JWT part uses.
var b64 = base64.RawURLEncoding

// decodeB64 reads base64url with or without padding (browsers send either).
func decodeB64(s string) ([]byte, error) {
	return b64.DecodeString(strings.TrimRight(s, "="))
}

// pushRecordSize is the record size written in the aes128gcm header; a push message
// is one record (RFC 8291 §4: at most 4096 octets of payload).
const pushRecordSize = 4096

// maxPushPlain is the most plaintext one push carries: 4096 less the header (86),
// the padding delimiter (1) and the AEAD tag (16).
const maxPushPlain = pushRecordSize - 86 - 1 - 16

// hkdfExpand is HKDF-Expand (RFC 5869) with SHA-256.
func hkdfExpand(prk []byte, info string, n int) []byte {
	out, err := hkdf.Expand(sha256.New, prk, info, n)
	if err != nil { // only for n > 255*32
		panic(err)
	}
	return out
}

// hmacSHA256 is HKDF-Extract(salt, ikm) = HMAC-SHA-256(salt, ikm).
func hmacSHA256(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}

// pushKeys derives the content encryption key and nonce of RFC 8291 §3.4 from the
// ECDH secret, the auth secret, both public keys (uncompressed points) and the salt.
// The sender and the browser run the same derivation, each with its own private key.
func pushKeys(ecdhSecret, authSecret, uaPublic, asPublic, salt []byte) (cek, nonce []byte) {
	// PRK_key = HMAC-SHA-256(auth_secret, ecdh_secret)
	prkKey := hmacSHA256(authSecret, ecdhSecret)
	// key_info = "WebPush: info" || 0x00 || ua_public || as_public
	keyInfo := "WebPush: info\x00" + string(uaPublic) + string(asPublic)
	ikm := hkdfExpand(prkKey, keyInfo, 32)
	// RFC 8188 §2.2: PRK = HMAC-SHA-256(salt, IKM)
	prk := hmacSHA256(salt, ikm)
	return hkdfExpand(prk, "Content-Encoding: aes128gcm\x00", 16), hkdfExpand(prk, "Content-Encoding: nonce\x00", 12)
}

// encryptPush encrypts plain for a subscription (its p256dh key and auth secret)
// as one aes128gcm record; asKey is the sender's one-time ECDH key and salt 16
// random octets (both fresh for every message; given here for the RFC's vector).
func encryptPush(plain []byte, uaPublic, authSecret []byte, asKey *ecdh.PrivateKey, salt []byte) ([]byte, error) {
	if len(plain) > maxPushPlain {
		return nil, fmt.Errorf("push message of %d bytes, over %d", len(plain), maxPushPlain)
	}
	if len(authSecret) != 16 {
		return nil, fmt.Errorf("push auth secret of %d bytes, not 16", len(authSecret))
	}
	if len(salt) != 16 {
		return nil, fmt.Errorf("push salt of %d bytes, not 16", len(salt))
	}
	ua, err := ecdh.P256().NewPublicKey(uaPublic)
	if err != nil {
		return nil, fmt.Errorf("push subscription key: %w", err)
	}
	secret, err := asKey.ECDH(ua)
	if err != nil {
		return nil, fmt.Errorf("push ECDH: %w", err)
	}
	asPublic := asKey.PublicKey().Bytes()
	cek, nonce := pushKeys(secret, authSecret, uaPublic, asPublic, salt)
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	// header: salt (16) || rs (uint32) || idlen (1) || keyid (the sender's public key)
	out := make([]byte, 0, 21+len(asPublic)+len(plain)+1+gcm.Overhead())
	out = append(out, salt...)
	out = binary.BigEndian.AppendUint32(out, pushRecordSize)
	out = append(out, byte(len(asPublic)))
	out = append(out, asPublic...)
	// The last (only) record's padding delimiter is 0x02, no padding after it.
	rec := append(append(make([]byte, 0, len(plain)+1), plain...), 0x02)
	return gcm.Seal(out, nonce, rec, nil), nil
}

// newPushMessage encrypts plain with a fresh sender key and salt.
func newPushMessage(plain []byte, uaPublic, authSecret []byte) ([]byte, error) {
	as, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	salt := make([]byte, 16)
	if _, err := io.ReadFull(rand.Reader, salt); err != nil {
		return nil, err
	}
	return encryptPush(plain, uaPublic, authSecret, as, salt)
}

// vapid is the server's application server key (RFC 8292).
type vapid struct {
	key *ecdsa.PrivateKey
	pub []byte // uncompressed point: the page's applicationServerKey and the header's k=
}

// vapidFile is where the key is kept, in orcr's state directory, mode 0600.
const vapidFile = "web-vapid.pem"

// loadVAPID reads the key from dir, or makes and stores one on first use.
func loadVAPID(dir string) (*vapid, error) {
	if dir == "" {
		return nil, errors.New("no state directory for the push key")
	}
	path := filepath.Join(dir, vapidFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return makeVAPID(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read push key: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("push key %s is readable by others (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("push key %s: not PEM; remove it and a new one is made (paired browsers then subscribe again)", path)
	}
	k, err := x509.ParseECPrivateKey(blk.Bytes)
	if err != nil || k.Curve != elliptic.P256() {
		return nil, fmt.Errorf("push key %s: not a P-256 key (%v); remove it and a new one is made", path, err)
	}
	return newVAPID(k)
}

func makeVAPID(path string) (*vapid, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // another start made it meanwhile
		return loadVAPID(filepath.Dir(path))
	}
	if err != nil {
		return nil, fmt.Errorf("store push key: %w", err)
	}
	if err := pem.Encode(f, &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("store push key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("store push key: %w", err)
	}
	return newVAPID(k)
}

func newVAPID(k *ecdsa.PrivateKey) (*vapid, error) {
	e, err := k.PublicKey.ECDH()
	if err != nil {
		return nil, err
	}
	return &vapid{key: k, pub: e.Bytes()}, nil
}

// vapidTTL is how long a VAPID JWT is good for (RFC 8292 §2: at most 24 hours).
const vapidTTL = 12 * time.Hour

// header is the Authorization header for a push to endpoint: "vapid t=JWT, k=KEY",
// the JWT's audience the endpoint's origin.
func (v *vapid) header(endpoint, sub string, now time.Time) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("push endpoint %q is not a URL", endpoint)
	}
	claims, err := json.Marshal(map[string]any{"aud": u.Scheme + "://" + u.Host, "exp": now.Add(vapidTTL).Unix(), "sub": sub})
	if err != nil {
		return "", err
	}
	signing := b64.EncodeToString([]byte(`{"typ":"JWT","alg":"ES256"}`)) + "." + b64.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, v.key, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64) // JWS ES256: r || s, 32 octets each
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return "vapid t=" + signing + "." + b64.EncodeToString(sig) + ", k=" + b64.EncodeToString(v.pub), nil
}
