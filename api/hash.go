package api

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
)

// MaxFileName bounds the name of a definition file.
const MaxFileName = 64

var fileName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*\.yaml$`)

// ValidFileName reports whether name may name a definition file: at most
// MaxFileName lower-case letters, digits, '_', '.' and '-', ending in
// .yaml.
func ValidFileName(name string) bool {
	return len(name) <= MaxFileName && fileName.MatchString(name)
}

// FileHash identifies a definition file by its text: the hex SHA-256 of
// it.
func FileHash(text []byte) string {
	sum := sha256.Sum256(text)
	return hex.EncodeToString(sum[:])
}

// SetHash identifies a set of definition files by their names and texts,
// whatever their order: the hex SHA-256 of, for each file in name order,
// its name, a zero byte, its text's FileHash and a newline.
func SetHash(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%s\n", n, FileHash(files[n]))
	}
	return hex.EncodeToString(h.Sum(nil))
}
