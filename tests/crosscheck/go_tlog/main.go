// Command go_tlog verifies a C2SP tiled transparency log with an implementation that is not
// tilejudge's: Go's golang.org/x/mod/sumdb/note and golang.org/x/mod/sumdb/tlog.
//
// Usage:
//
//	go_tlog [-origin ORIGIN] [-proofs FILE] SOURCE VERIFIER_KEY [INDEX...]
//
// SOURCE is a directory laid out as the log is served, or the log's http(s) base URL (the one
// `checkpoint` and `tile/...` are under). The command opens the checkpoint with the verifier
// key (note.Open), recomputes the signed root from the hash tiles (tlog.TileHashReader and
// tlog.TreeHash), rebuilds the tree from the entry bundles and compares the roots, and proves
// each listed record (every record when none is listed) with tlog.ProveRecord and
// tlog.CheckRecord. With -proofs it also checks the inclusion and consistency proofs in FILE
// (JSON, hashes in hex, made by the implementation under test) against the checkpoint, and that
// they equal the proofs Go computes itself.
//
// It prints one line of JSON: {"ok": true, ...} with what it checked, or {"ok": false,
// "error": "..."} with the first failure (also written to standard error), and exits 1 on a
// failure, 2 on bad usage.
//
// Build it without modules, from Debian's golang-golang-x-mod-dev:
//
//	GO111MODULE=off GOPATH=/tmp/gopath:/usr/share/gocode go build -o go_tlog .
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// tileHeight is C2SP's: 256 hashes per tile.
const tileHeight = 8

// maxResource bounds what one fetched file may cost: a full tile is 8 KiB, a full bundle at
// most 256 entries of 64 KiB.
const maxResource = 256*(2+65535) + 1

// A source reads the log's files by their C2SP path.
type source interface {
	read(path string) ([]byte, error)
}

type dirSource struct{ dir string }

func (s dirSource) read(path string) ([]byte, error) {
	return os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(path)))
}

type httpSource struct {
	base   string
	client *http.Client
}

func (s httpSource) read(path string) ([]byte, error) {
	url := s.base + "/" + path
	resp, err := s.client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResource+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %v", url, err)
	}
	if len(data) > maxResource {
		return nil, fmt.Errorf("GET %s: more than %d bytes", url, maxResource)
	}
	return data, nil
}

// c2spPath is the C2SP path of a Go tile. Go's own Path() is tile/8/<L>/<N>[.p/<W>], with
// "data" for the entries level; C2SP drops the height and says "entries". The encoding of N is
// Go's, so the test also checks the Python side's.
func c2spPath(t tlog.Tile) string {
	path := strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/", tileHeight))
	if strings.HasPrefix(path, "data/") {
		path = "entries/" + strings.TrimPrefix(path, "data/")
	}
	return "tile/" + path
}

// tileReader serves tlog.TileHashReader from the source, keeping the tiles it has seen.
type tileReader struct {
	src   source
	cache map[tlog.Tile][]byte
}

func (r *tileReader) Height() int { return tileHeight }

func (r *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	data := make([][]byte, len(tiles))
	for i, t := range tiles {
		if cached, ok := r.cache[t]; ok {
			data[i] = cached
			continue
		}
		d, err := r.src.read(c2spPath(t))
		if err != nil {
			return nil, fmt.Errorf("reading tile %s: %v", c2spPath(t), err)
		}
		data[i] = d
	}
	return data, nil
}

func (r *tileReader) SaveTiles(tiles []tlog.Tile, data [][]byte) {
	for i, t := range tiles {
		r.cache[t] = data[i]
	}
}

// checkpoint is the C2SP tlog-checkpoint body (Go's tlog.ParseTree reads sumdb's own format,
// whose first line is "go.sum database tree").
type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

func parseCheckpoint(text string) (checkpoint, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if !strings.HasSuffix(text, "\n") || len(lines) < 3 || lines[0] == "" {
		return checkpoint{}, errors.New("malformed checkpoint text")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return checkpoint{}, fmt.Errorf("malformed checkpoint size %q", lines[1])
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		return checkpoint{}, fmt.Errorf("malformed checkpoint root %q", lines[2])
	}
	return checkpoint{origin: lines[0], size: size, root: root}, nil
}

// decodeBundle splits a C2SP entry bundle: big-endian uint16 lengths, each before its entry.
func decodeBundle(data []byte) ([][]byte, error) {
	var entries [][]byte
	for len(data) > 0 {
		if len(data) < 2 {
			return nil, errors.New("truncated entry length")
		}
		n := int(binary.BigEndian.Uint16(data))
		if len(data) < 2+n {
			return nil, errors.New("truncated entry")
		}
		entries = append(entries, data[2:2+n])
		data = data[2+n:]
	}
	return entries, nil
}

// proofsFile holds proofs made by the implementation under test, all against the checkpoint.
type proofsFile struct {
	Records []struct {
		Index    int64    `json:"index"`
		LeafHash string   `json:"leaf_hash"`
		Proof    []string `json:"proof"`
	} `json:"records"`
	Trees []struct {
		OldSize int64    `json:"old_size"`
		OldRoot string   `json:"old_root"`
		Proof   []string `json:"proof"`
	} `json:"trees"`
}

func parseHex(s string) (tlog.Hash, error) {
	var h tlog.Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != tlog.HashSize {
		return h, fmt.Errorf("malformed hash %q", s)
	}
	copy(h[:], b)
	return h, nil
}

func parseHexList(list []string) ([]tlog.Hash, error) {
	hashes := make([]tlog.Hash, len(list))
	for i, s := range list {
		h, err := parseHex(s)
		if err != nil {
			return nil, err
		}
		hashes[i] = h
	}
	return hashes, nil
}

func sameHashes(a, b []tlog.Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

type result struct {
	OK                bool     `json:"ok"`
	Error             string   `json:"error,omitempty"`
	Origin            string   `json:"origin,omitempty"`
	Size              int64    `json:"size"`
	Root              string   `json:"root,omitempty"`
	Signers           []string `json:"signers,omitempty"`
	Tiles             int      `json:"tiles_read"`
	Entries           int64    `json:"entries"`
	RecordsProved     int      `json:"records_proved"`
	RecordProofsGiven int      `json:"record_proofs_checked"`
	TreeProofsGiven   int      `json:"tree_proofs_checked"`
}

func verify(src source, vkey, origin, proofsPath string, indexes []int64) (*result, error) {
	res := &result{}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		return res, fmt.Errorf("verifier key: %v", err)
	}
	msg, err := src.read("checkpoint")
	if err != nil {
		return res, fmt.Errorf("reading the checkpoint: %v", err)
	}
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		return res, fmt.Errorf("opening the checkpoint note: %v", err)
	}
	for _, sig := range n.Sigs {
		res.Signers = append(res.Signers, fmt.Sprintf("%s+%08x", sig.Name, sig.Hash))
	}
	cp, err := parseCheckpoint(n.Text)
	if err != nil {
		return res, err
	}
	res.Origin, res.Size, res.Root = cp.origin, cp.size, cp.root.String()
	if origin != "" && cp.origin != origin {
		return res, fmt.Errorf("checkpoint origin %q, want %q", cp.origin, origin)
	}
	if cp.size == 0 {
		// RFC 6962's empty tree hash; Go's tlog.TreeHash(0) is all zeros instead.
		if cp.root != tlog.Hash(sha256.Sum256(nil)) {
			return res, errors.New("the empty tree's root is not SHA-256 of nothing")
		}
		res.OK = true
		return res, nil
	}

	// The hash tiles must recompute to the signed root.
	tr := &tileReader{src: src, cache: map[tlog.Tile][]byte{}}
	thr := tlog.TileHashReader(tlog.Tree{N: cp.size, Hash: cp.root}, tr)
	th, err := tlog.TreeHash(cp.size, thr)
	if err != nil {
		return res, fmt.Errorf("tree hash from the tiles: %v", err)
	}
	if th != cp.root {
		return res, fmt.Errorf("the tiles hash to %v, the checkpoint says %v", th, cp.root)
	}

	// The entry bundles must hold exactly the tree's entries: rebuild the tree from them.
	var stored []tlog.Hash
	memory := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = stored[x]
		}
		return out, nil
	})
	recordHashes := make([]tlog.Hash, 0, cp.size)
	for start := int64(0); start < cp.size; start += 1 << tileHeight {
		width := cp.size - start
		if width > 1<<tileHeight {
			width = 1 << tileHeight
		}
		bundle := tlog.Tile{H: tileHeight, L: -1, N: start >> tileHeight, W: int(width)}
		data, err := src.read(c2spPath(bundle))
		if err != nil {
			return res, fmt.Errorf("reading entry bundle %s: %v", c2spPath(bundle), err)
		}
		entries, err := decodeBundle(data)
		if err != nil {
			return res, fmt.Errorf("entry bundle %s: %v", c2spPath(bundle), err)
		}
		if int64(len(entries)) != width {
			return res, fmt.Errorf("entry bundle %s holds %d entries, want %d", c2spPath(bundle), len(entries), width)
		}
		for i, entry := range entries {
			hashes, err := tlog.StoredHashes(start+int64(i), entry, memory)
			if err != nil {
				return res, err
			}
			stored = append(stored, hashes...)
			recordHashes = append(recordHashes, tlog.RecordHash(entry))
		}
	}
	res.Entries = int64(len(recordHashes))
	rebuilt, err := tlog.TreeHash(cp.size, memory)
	if err != nil {
		return res, err
	}
	if rebuilt != cp.root {
		return res, fmt.Errorf("the entry bundles hash to %v, the checkpoint says %v", rebuilt, cp.root)
	}

	// Each record is proved from the tiles alone, as a client holding one entry would.
	if len(indexes) == 0 {
		for i := int64(0); i < cp.size; i++ {
			indexes = append(indexes, i)
		}
	}
	for _, i := range indexes {
		if i < 0 || i >= cp.size {
			return res, fmt.Errorf("record %d is not in the tree of size %d", i, cp.size)
		}
		p, err := tlog.ProveRecord(cp.size, i, thr)
		if err != nil {
			return res, fmt.Errorf("proving record %d from the tiles: %v", i, err)
		}
		if err := tlog.CheckRecord(p, cp.size, cp.root, i, recordHashes[i]); err != nil {
			return res, fmt.Errorf("record %d: %v", i, err)
		}
		res.RecordsProved++
	}

	if proofsPath != "" {
		if err := checkGivenProofs(proofsPath, cp, thr, res); err != nil {
			return res, err
		}
	}
	res.Tiles = len(tr.cache)
	res.OK = true
	return res, nil
}

func checkGivenProofs(path string, cp checkpoint, thr tlog.HashReader, res *result) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var given proofsFile
	if err := json.Unmarshal(raw, &given); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	for _, r := range given.Records {
		leaf, err := parseHex(r.LeafHash)
		if err != nil {
			return err
		}
		proof, err := parseHexList(r.Proof)
		if err != nil {
			return err
		}
		if err := tlog.CheckRecord(proof, cp.size, cp.root, r.Index, leaf); err != nil {
			return fmt.Errorf("given inclusion proof of record %d: %v", r.Index, err)
		}
		own, err := tlog.ProveRecord(cp.size, r.Index, thr)
		if err != nil {
			return err
		}
		if !sameHashes(proof, own) {
			return fmt.Errorf("given inclusion proof of record %d differs from Go's", r.Index)
		}
		res.RecordProofsGiven++
	}
	for _, t := range given.Trees {
		old, err := parseHex(t.OldRoot)
		if err != nil {
			return err
		}
		proof, err := parseHexList(t.Proof)
		if err != nil {
			return err
		}
		if err := tlog.CheckTree(proof, cp.size, cp.root, t.OldSize, old); err != nil {
			return fmt.Errorf("given consistency proof from size %d: %v", t.OldSize, err)
		}
		own, err := tlog.ProveTree(cp.size, t.OldSize, thr)
		if err != nil {
			return err
		}
		if !sameHashes(proof, own) {
			return fmt.Errorf("given consistency proof from size %d differs from Go's", t.OldSize)
		}
		res.TreeProofsGiven++
	}
	return nil
}

func main() {
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go_tlog [-origin ORIGIN] [-proofs FILE] SOURCE VERIFIER_KEY [INDEX...]\n")
		flag.PrintDefaults()
	}
	origin := flag.String("origin", "", "the checkpoint origin to require")
	proofs := flag.String("proofs", "", "a JSON file of inclusion and consistency proofs to check")
	flag.Parse()
	if flag.NArg() < 2 {
		flag.Usage()
		os.Exit(2)
	}
	var indexes []int64
	for _, arg := range flag.Args()[2:] {
		i, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "go_tlog: record index %q is not a number\n", arg)
			os.Exit(2)
		}
		indexes = append(indexes, i)
	}
	var src source
	if where := flag.Arg(0); strings.HasPrefix(where, "http://") || strings.HasPrefix(where, "https://") {
		src = httpSource{base: strings.TrimRight(where, "/"), client: &http.Client{Timeout: 30 * time.Second}}
	} else {
		src = dirSource{dir: where}
	}
	res, err := verify(src, flag.Arg(1), *origin, *proofs, indexes)
	if err != nil {
		res.OK = false
		res.Error = err.Error()
		fmt.Fprintf(os.Stderr, "go_tlog: %v\n", err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if encodeErr := enc.Encode(res); encodeErr != nil {
		fmt.Fprintf(os.Stderr, "go_tlog: %v\n", encodeErr)
		os.Exit(1)
	}
	os.Stdout.Write(out.Bytes())
	if err != nil {
		os.Exit(1)
	}
}
