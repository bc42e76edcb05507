package nftables

// Ownership says what the nftables mode owns: the table of that name in
// each of the families, and everything in it. Every other table is
// foreign and left exactly as it is. render declares it; apply reads and
// writes only what it names.
type Ownership struct {
	Table    string   `json:"table"`
	Families []Family `json:"families"`
}
