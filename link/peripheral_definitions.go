package link

import (
	"fmt"
	"strings"

	"senseboard/api"
	"senseboard/wire"
)

// definitions answers a Definitions frame: the index of the device's
// definition files (the built-in ones by name, with the hash of the whole
// embedded set; those its apps added with their hashes), or one file's
// text. Like a request, it needs the link's admission (an encrypted link
// when the device has a pass key).
func (rs *radioSession) definitions(f wire.Frame) {
	req, err := ParseDefinitionsRequest(f.Payload)
	if err == nil {
		err = rs.link.Admit()
	}
	if err != nil {
		rs.fail(f.ID, err)
		return
	}
	files := rs.p.Server.Device.Definitions()
	if req.File == "" {
		m := DefinitionsMsg{Builtin: &BuiltinDefinitions{Set: api.EmbeddedHash(), Files: []string{}}, Apps: []DefinitionRef{}}
		for _, df := range files {
			if api.IsEmbedded(df) {
				m.Builtin.Files = append(m.Builtin.Files, df.Name)
			} else {
				m.Apps = append(m.Apps, DefinitionRef{Name: df.Name, SHA256: api.FileHash(df.Raw)})
			}
		}
		rs.reply(DefinitionsData, f.ID, &m)
		return
	}
	var names []string
	for _, df := range files {
		if df.Name != req.File {
			names = append(names, df.Name)
			continue
		}
		b, err := wire.AppendJSONFrame(nil, DefinitionsData, f.ID, &DefinitionsMsg{File: &DefinitionFile{
			Name: df.Name, SHA256: api.FileHash(df.Raw), YAML: string(df.Raw)}})
		if err == nil && len(b)-wire.HeaderSize-wire.TrailSize > wire.MaxPayload {
			err = fmt.Errorf("definitions: file %s takes %d bytes in a frame; a frame carries at most %d",
				df.Name, len(b)-wire.HeaderSize-wire.TrailSize, wire.MaxPayload)
		}
		if err != nil {
			rs.fail(f.ID, err)
			return
		}
		rs.st.Write(b)
		return
	}
	rs.fail(f.ID, fmt.Errorf("definitions: the device has no file %s; it has %s", req.File, strings.Join(names, ", ")))
}
