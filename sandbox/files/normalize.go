package files

import "strings"

// Normalize maps p to a path relative to the home: "/" and "." are
// dropped, ".." pops a component but never leaves the home, and "" names
// the home itself. The result has no empty, "." or ".." component.
func Normalize(p string) (string, error) {
	parts, err := components(p)
	if err != nil {
		return "", err
	}
	return strings.Join(parts, "/"), nil
}

func components(p string) ([]string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return nil, ErrInvalidPath
	}
	var out []string
	for c := range strings.SplitSeq(p, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, c)
		}
	}
	return out, nil
}
