package web_test

import (
	"bytes"
	"crypto/ecdh"
	"orcr/web"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := web.DecodeB64(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return b
}

// TestPushEncryptRFC8291Vector encrypts RFC 8291's Appendix A message with its keys
// and salt and gets its ciphertext byte for byte; the browser's side (decryptPush,
// the derivation with the subscriber's private key) reads it back.
func TestPushEncryptRFC8291Vector(t *testing.T) {
	plain := []byte("When I grow up, I want to be a watermelon")
	asPriv, err := ecdh.P256().NewPrivateKey(mustB64(t, "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b64.EncodeToString(asPriv.PublicKey().Bytes()), "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"; got != want {
		t.Fatalf("as_public %s, want %s", got, want)
	}
	uaPub := mustB64(t, "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
	salt := mustB64(t, "DGv6ra1nlYgDCS1FRnbzlw")
	auth := mustB64(t, "BTBZMqHH6r4Tts7J_aSIgg")
	got, err := web.EncryptPush(plain, uaPub, auth, asPriv, salt)
	if err != nil {
		t.Fatal(err)
	}
	want := "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
	if b64.EncodeToString(got) != want {
		t.Fatalf("ciphertext\n %s\nwant\n %s", b64.EncodeToString(got), want)
	}
	uaPriv, err := ecdh.P256().NewPrivateKey(mustB64(t, "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"))
	if err != nil {
		t.Fatal(err)
	}
	back, err := decryptPush(got, uaPriv, auth)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, plain) {
		t.Fatalf("decrypted %q", back)
	}
}

// TestPushEncryptFresh: two messages with fresh keys differ and each decrypts; a
// wrong auth secret does not.
func TestPushEncryptFresh(t *testing.T) {
	ua, _ := ecdh.P256().GenerateKey(nil)
	auth := bytes.Repeat([]byte{7}, 16)
	a, err := web.NewPushMessage([]byte("hello"), ua.PublicKey().Bytes(), auth)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := web.NewPushMessage([]byte("hello"), ua.PublicKey().Bytes(), auth)
	if bytes.Equal(a, b) {
		t.Fatal("two messages alike: the sender key or salt is not fresh")
	}
	if p, err := decryptPush(a, ua, auth); err != nil || string(p) != "hello" {
		t.Fatalf("decrypt: %q %v", p, err)
	}
	if _, err := decryptPush(a, ua, bytes.Repeat([]byte{8}, 16)); err == nil {
		t.Fatal("a wrong auth secret decrypted")
	}
	if _, err := web.NewPushMessage(make([]byte, web.MaxPushPlain+1), ua.PublicKey().Bytes(), auth); err == nil {
		t.Fatal("an oversized message was encrypted")
	}
	if _, err := web.NewPushMessage([]byte("x"), []byte("not a point"), auth); err == nil {
		t.Fatal("a bad subscription key was taken")
	}
}

// TestVAPIDKeyStored: the key is made on first use, mode 0600, and the same key
// is read back; a key readable by others is refused.
func TestVAPIDKeyStored(t *testing.T) {
	dir := t.TempDir()
	pub1, _, err := web.VAPIDKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, web.VAPIDFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v, want 0600", fi.Mode().Perm())
	}
	pub2, _, err := web.VAPIDKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pub1, pub2) || len(pub1) != 65 || pub1[0] != 4 {
		t.Fatalf("key not kept: %x vs %x", pub1, pub2)
	}
	os.Chmod(filepath.Join(dir, web.VAPIDFile), 0o644)
	if _, _, err := web.VAPIDKey(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable key: %v", err)
	}
	os.WriteFile(filepath.Join(dir, web.VAPIDFile), []byte("junk"), 0o600)
	if _, _, err := web.VAPIDKey(dir); err == nil {
		t.Fatal("a junk key was read")
	}
}

// TestVAPIDHeader: the header's JWT verifies with k, its audience is the
// endpoint's origin, it expires within 24 hours and names a subject.
func TestVAPIDHeader(t *testing.T) {
	_, header, err := web.VAPIDKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	h, err := header("https://push.example.net:8443/wpush/v2/abc?x=1", "mailto:me@example.net", now)
	if err != nil {
		t.Fatal(err)
	}
	c, err := verifyVAPID(h, "https://push.example.net:8443", now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sub != "mailto:me@example.net" {
		t.Fatalf("sub %q", c.Sub)
	}
	if _, err := verifyVAPID(h, "https://other.example.net", now); err == nil {
		t.Fatal("a JWT for another origin verified")
	}
	// One bit of the signature flipped.
	i := strings.Index(h, ", k=") - 3
	bad := h[:i] + string(h[i]^1) + h[i+1:]
	if _, err := verifyVAPID(bad, "https://push.example.net:8443", now); err == nil {
		t.Fatal("a tampered JWT verified")
	}
	if _, err := header("not a url", "mailto:x@y", now); err == nil {
		t.Fatal("a header for no URL")
	}
}
