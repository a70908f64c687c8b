#!/usr/bin/env -S python3 -u
# once input "inputs/"
# once output "generated.json"

import json
print(json.dumps({}))
