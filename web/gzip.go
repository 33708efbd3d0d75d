package web

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Answers are gzipped for a client that accepts it: a phone on a slow link loads the
// page and a fleet's list in a tenth of the bytes (web.agents for 1,000 agents is
// 152 KB of JSON, ~15 KB gzipped). The page's own files are compressed once; a
// method's answer at the fastest level, when it is over gzipMin bytes. Event
// streams are not: each event is flushed on its own, where a gzip stream would
// either hold it back or gain little. Nothing secret is in an answer the gateway
// compresses together with what a request chose (tokens are minted on the socket
// only), so compression leaks nothing (BREACH).
const gzipMin = 1024

var gzipPool = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip (listed, and
// not with q=0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		k, v, ok := strings.Cut(strings.ReplaceAll(params, " ", ""), "=")
		if !ok || !strings.EqualFold(k, "q") {
			return true
		}
		q, err := strconv.ParseFloat(v, 64)
		return err == nil && q > 0
	}
	return false
}

// gzipBytes compresses b at the fastest level.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzipPool.Get().(*gzip.Writer)
	zw.Reset(&buf)
	zw.Write(b)
	zw.Close()
	gzipPool.Put(zw)
	return buf.Bytes()
}

// writeBody writes b as the answer's body (the headers but the encoding set),
// gzipped when the client takes it and b is big enough to gain; zipped is b
// compressed already (nil: compress now if it pays).
func writeBody(w http.ResponseWriter, r *http.Request, b, zipped []byte) {
	hd := w.Header()
	hd.Add("Vary", "Accept-Encoding")
	if acceptsGzip(r) && (zipped != nil || len(b) >= gzipMin) {
		if zipped == nil {
			zipped = gzipBytes(b)
		}
		if len(zipped) < len(b) {
			hd.Set("Content-Encoding", "gzip")
			b = zipped
		}
	}
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}
