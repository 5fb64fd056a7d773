"""moto's server, with one lookup made direct (issue 30).

moto reads an EC2 resource's tags (TaggedEC2Resource.get_tags) by scanning
every tag of the region with a regular expression per entry
(TagBackend.describe_tags with a resource-id filter), and it does so for
every instance it filters by tag and every instance it writes into an
answer. With a few thousand instances of five tags each, one
DescribeInstances by tag of a 1,000-machine model took over two minutes on
the shared 2-core machine, and a describe of 400 ids by id 20 s: the local
stack's teardown was bound by moto, not by EC2's limits. Here the same
answer comes from the backend's own per-resource dict (the entries
describe_tags would have matched, in the same order and shape: fnmatch's
pattern of an id without wildcards matches that id alone). Nothing else of
moto changes.
"""

import sys

from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix


def _get_tags(self):
    resource_id = getattr(self, "id", None)
    if not resource_id:
        return []
    # .get: the backend's dict is a defaultdict, and a read must not add an entry
    tags = self.ec2_backend.tags.get(resource_id)
    if not tags:
        return []
    resource_type = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
    return [
        {"resource_id": resource_id, "key": key, "value": value, "resource_type": resource_type}
        for key, value in list(tags.items())
    ]


TaggedEC2Resource.get_tags = _get_tags

if __name__ == "__main__":
    from moto.server import main

    sys.exit(main(sys.argv[1:]))
