package messages

import (
	"strconv"
)

// MaxIDChunkBytes bounds an encoded IDChunk: well under a stock server's
// 1 MiB max_payload.
const MaxIDChunkBytes = 512 << 10

// IDChunk is one part of a large attempt's task ids, stored in the
// manifest's bucket under IDChunkKey(batch, digest, n) when the ids are
// too many for the manifest itself (AttemptManifest.IDChunks says how
// many parts; IDs in order of n are the attempt's ids in publication
// order). The key names the attempt's digest, not its number: the ids are
// a function of the task set, so an attempt with the same tasks (a
// replay) shares them, and a different task set under the same batch id
// never writes over them.
type IDChunk struct {
	V   int      `json:"v"`
	IDs []string `json:"ids"`
}

// IDChunkKey is the key of part n of the ids of batch's task set with
// digest: "<batch>.ids.<digest>.<n>". A batch id is one token, or two
// for a tenant's, so no batch's manifest key has four tokens or more, and
// a chunk key never is a manifest's.
func IDChunkKey(batch, digest string, n int) string {
	return batch + ".ids." + digest + "." + strconv.Itoa(n)
}

// DecodeIDChunk decodes a stored IDChunk strictly: version, size, and
// every id a valid task id. Any refusal is an *Error.
func DecodeIDChunk(data []byte) (*IDChunk, error) {
	if len(data) > MaxIDChunkBytes {
		return nil, fieldErr(CodeTooLarge, "", "id chunk is %d bytes, at most %d", len(data), MaxIDChunkBytes)
	}
	var c IDChunk
	if err := decodeStrict(data, &c); err != nil {
		return nil, err
	}
	if c.V != Version {
		return nil, fieldErr(CodeVersion, "v", "id chunk version %d is not supported", c.V)
	}
	if len(c.IDs) == 0 {
		return nil, fieldErr(CodeMissingField, "ids", "an id chunk holds at least one id")
	}
	for i, id := range c.IDs {
		if err := checkID("ids["+strconv.Itoa(i)+"]", id); err != nil {
			return nil, err
		}
	}
	return &c, nil
}
