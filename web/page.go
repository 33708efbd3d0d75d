package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"

	"orcr/core/wire"
	webapi "orcr/web/api"
)

// static is the page: HTML, CSS and JS written for orcr, no build step, nothing
// fetched from elsewhere.
//
//go:embed static
var static embed.FS

var palette = sync.OnceValue(paletteCSS)

// index is the page as served: index.html with app.js put inline in the place of its
// <script src="/static/app.js"> (first in the head). The script then runs as the
// HTML is parsed — no round trip for it, no wait for the style sheets, which a
// script after them waits for — and asks for the agents at once. Before, the
// list was asked for only after the HTML, then the script, were in and the script
// had waited its turn (100–400 ms of a load at a load average of 20).
var index = sync.OnceValue(func() []byte {
	page, err := static.ReadFile("static/index.html")
	if err != nil {
		panic("web: the page is not embedded: " + err.Error())
	}
	js, err := static.ReadFile("static/app.js")
	if err != nil {
		panic("web: the page's script is not embedded: " + err.Error())
	}
	const tag = `<script src="/static/app.js"></script>`
	if !bytes.Contains(page, []byte(tag)) || bytes.Contains(js, []byte("</script")) {
		panic("web: index.html must load app.js by " + tag + " and app.js must not close a script")
	}
	return bytes.Replace(page, []byte(tag), append(append([]byte("<script>"), js...), "</script>"...), 1)
})

// csp is the content policy of every answer: the page loads only its own files, and
// runs one inline script, allowed by its hash: app.js, put inline by index.
var csp = sync.OnceValue(func() string {
	js, _ := static.ReadFile("static/app.js")
	sum := sha256.Sum256(js)
	return "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self' 'sha256-" +
		base64.StdEncoding.EncodeToString(sum[:]) + "'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'"
})

func staticHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/static/palette.css" {
			w.Header().Set("Content-Type", "text/css; charset=utf-8")
			w.Header().Set("Cache-Control", "public, max-age=86400")
			writeBody(w, r, []byte(palette()), paletteGz())
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/static/")
		b, err := static.ReadFile("static/" + name) // the embedded tree only: no "..", no directory
		if err != nil || !fs.ValidPath(name) {
			http.NotFound(w, r)
			return
		}
		ct := mime.TypeByExtension(path.Ext(name))
		if ct == "" {
			ct = "application/octet-stream"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Cache-Control", "no-cache")
		var zipped []byte
		if len(b) >= gzipMin {
			z, ok := staticGz.Load(name)
			if !ok {
				z, _ = staticGz.LoadOrStore(name, gzipBytes(b))
			}
			zipped = z.([]byte)
		}
		writeBody(w, r, b, zipped)
	})
}

// staticGz holds the page's files compressed, by name, once each.
var staticGz sync.Map

func serveFile(w http.ResponseWriter, name string) {
	b, err := static.ReadFile("static/" + name)
	if err != nil {
		http.Error(w, "missing "+name, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

// serviceWorker serves the page's service worker from the root, so its scope is the
// whole page: it shows the pushes and opens the page on a tap.
func serviceWorker(w http.ResponseWriter, r *http.Request) {
	b, err := static.ReadFile("static/sw.js")
	if err != nil {
		http.Error(w, "missing sw.js", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

// page serves the cockpit; it asks the API and shows how to pair when refused.
func (g *gateway) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	writeBody(w, r, index(), indexGz())
}

// indexGz and paletteGz are the page and the palette compressed once.
var (
	indexGz   = sync.OnceValue(func() []byte { return gzipBytes(index()) })
	paletteGz = sync.OnceValue(func() []byte { return gzipBytes([]byte(palette())) })
)

// pairPage serves the page a pairing URL opens: its script posts the code (a link
// previewer that only fetches the URL spends nothing).
func (g *gateway) pairPage(w http.ResponseWriter, r *http.Request) { serveFile(w, "pair.html") }

// pairRedeem spends a pairing code for a browser session in an HttpOnly,
// SameSite=Strict cookie.
func (g *gateway) pairRedeem(w http.ResponseWriter, r *http.Request) {
	if crossSite(r) || r.Header.Get(csrfHeader) != "1" {
		writeError(w, wire.Errorf(wire.CodePermission, "pairing is done by the gateway's own page"))
		return
	}
	var p struct {
		Code string `json:"code"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&p); err != nil || p.Code == "" {
		writeError(w, wire.Errorf(wire.CodeInvalidParams, "pairing needs {\"code\": …} from the URL orcr web pair printed"))
		return
	}
	t, secret, err := g.s.auth.redeem(r.Context(), strings.TrimSpace(p.Code), device(r.UserAgent()))
	if err != nil {
		var we *wire.Error
		if e, ok := err.(*wire.Error); ok {
			we = e
		} else {
			we = wire.Errorf(webapi.CodeUnauthorized, "%s", err.Error())
		}
		writeError(w, we)
		return
	}
	maxAge := 0
	if t.ExpiresAt != nil {
		maxAge = int(t.ExpiresAt.Sub(t.CreatedAt).Seconds())
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: secret, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]string{"name": t.Name, "scope": t.Scope})
}

// logout revokes this browser's session.
func (g *gateway) logout(w http.ResponseWriter, r *http.Request) {
	c, ok := g.authenticate(w, r)
	if !ok {
		return
	}
	if c.kind == webapi.KindSession {
		_ = g.s.auth.remove(r.Context(), c.name)
		g.s.push.drop(r.Context(), c.name)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}

// device is a short name for a browser from its user agent.
func device(ua string) string {
	ua = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, ua)
	if len(ua) > 80 {
		ua = ua[:80]
	}
	return ua
}
