#!/usr/bin/env python3
"""Runs ../shared/peers/splishsplash_collapse.py with the scene's viscosity and largest step
changed (usage in peer_collapse.sh). The shared script builds its scene dict and writes it with
json.dump; this wrapper edits the dict on its way to the file, so the scene is otherwise the
shared one, byte for byte."""
import json, sys


def main():
    peers, args = sys.argv[1], sys.argv[2:]
    sys.path.insert(0, peers)
    edits = {}
    rest = []
    i = 0
    while i < len(args):
        if args[i] in ("--viscosity", "--max-dt") and i + 1 < len(args):
            edits[args[i]] = float(args[i + 1])
            i += 2
        else:
            rest.append(args[i])
            i += 1
    import splishsplash as peer
    import splishsplash_collapse as collapse
    dump = json.dump

    def edited_dump(scene, f, **kw):
        if "--viscosity" in edits:
            scene["Materials"][0]["Standard viscosity"]["viscosity"] = edits["--viscosity"]
        if "--max-dt" in edits:
            scene["Configuration"]["cflMaxTimeStepSize"] = edits["--max-dt"]
        print("# peer_collapse: viscosity %g m^2/s, largest step %g s"
              % (scene["Materials"][0]["Standard viscosity"]["viscosity"],
                 scene["Configuration"]["cflMaxTimeStepSize"]), flush=True)
        return dump(scene, f, **kw)

    peer.json = type(json)("json_edited")
    peer.json.dump = edited_dump
    sys.argv = ["splishsplash_collapse.py"] + rest
    collapse.main()


if __name__ == "__main__":
    main()
