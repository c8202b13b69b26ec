// Go peer for the loadbench benchmarks: net/http, with golang.org/x/net/http2/h2c for cleartext HTTP/2.
//
//	loadbench-peer-go PORT              HTTP/1.1 and h2c (prior knowledge or Upgrade) on 127.0.0.1:PORT
//	loadbench-peer-go PORT CERT KEY     TLS; ALPN offers h2 and http/1.1 (net/http's built-in HTTP/2)
//
// Workers: GOMAXPROCS (read by the Go runtime). Routes mirror the Beast reference server:
// GET / and /plaintext -> "Hello, World!\n" text/plain, GET /json -> {"message":"Hello, World!"}
// (encoding/json per request), POST /echo -> the body back with its content type, other paths ->
// 404, a known path with a wrong method -> 405. SIGTERM ends the process (default disposition).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
)

var plaintext = []byte("Hello, World!\n")
var routes = map[string]string{"/": "GET", "/plaintext": "GET", "/json": "GET", "/echo": "POST"}

type message struct {
	Message string `json:"message"`
}

func answer(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h["Content-Type"] = []string{contentType}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	w.Write(body)
}

func handle(w http.ResponseWriter, r *http.Request) {
	want, known := routes[r.URL.Path]
	switch {
	case !known:
		answer(w, http.StatusNotFound, "text/plain", []byte("Not Found\n"))
	case r.Method != want:
		w.Header().Set("Allow", want)
		answer(w, http.StatusMethodNotAllowed, "text/plain", []byte("Method Not Allowed\n"))
	case r.URL.Path == "/json":
		body, _ := json.Marshal(message{Message: "Hello, World!"})
		answer(w, http.StatusOK, "application/json", body)
	case r.URL.Path == "/echo":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			answer(w, http.StatusBadRequest, "text/plain", []byte("Bad Request\n"))
			return
		}
		ctype := r.Header.Get("Content-Type")
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		answer(w, http.StatusOK, ctype, body)
	default:
		answer(w, http.StatusOK, "text/plain", plaintext)
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadbench-peer-go PORT [CERT KEY]   (GOMAXPROCS=N)")
		os.Exit(2)
	}
	if _, err := strconv.Atoi(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench-peer-go: PORT must be a number")
		os.Exit(2)
	}
	addr := "127.0.0.1:" + os.Args[1]
	handler := http.HandlerFunc(handle)
	if len(os.Args) >= 4 {
		srv := &http.Server{Addr: addr, Handler: handler}
		log.Fatal(srv.ListenAndServeTLS(os.Args[2], os.Args[3]))
	}
	srv := &http.Server{Addr: addr, Handler: h2c.NewHandler(handler, &http2.Server{})}
	log.Fatal(srv.ListenAndServe())
}
