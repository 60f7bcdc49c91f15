"""The generated-client round trip of the contract test (scripts/contract).

`client` is the package openapi-python-client generated from the served document, used as generated:
create a customer, read it back, list customers, create a product with variants and read one variant.
Every answer must parse into the generated models (a strict typed client), not only arrive.

Usage: python contract_client.py BASE_URL API_KEY (with the generated package on PYTHONPATH).
"""

import sys
import uuid

from client import AuthenticatedClient
from client.api.customers import create_customer, get_customer, list_customers
from client.api.products import create_product, get_product
from client.models import (
    ContactEnvelope,
    ContactInput,
    ListEnvelopeContactData,
    ProductCreatedEnvelope,
    ProductEnvelope,
    ProductInput,
)


def expect(response, status, model):
    body = response.content.decode(errors="replace")
    assert response.status_code == status, f"expected {status}, got {response.status_code}: {body}"
    assert isinstance(response.parsed, model), f"expected a {model.__name__}, got {response.parsed!r}: {body}"
    return response.parsed


def main(base, key):
    api = AuthenticatedClient(base_url=base, token=key, raise_on_unexpected_status=True)
    run = uuid.uuid4().hex[:8]

    created = expect(
        create_customer.sync_detailed(
            client=api,
            body=ContactInput(name=f"Cliente {run}", email=f"cliente{run}@example.com", tax_id="20123456786"),
        ),
        201,
        ContactEnvelope,
    )
    customer = created.data
    assert customer.name == f"Cliente {run}" and customer.phone is None, customer

    read = expect(get_customer.sync_detailed(client=api, customer_id=customer.id), 200, ContactEnvelope)
    assert read.data.id == customer.id and read.data.email == f"cliente{run}@example.com", read.data

    page = expect(list_customers.sync_detailed(client=api, limit=100), 200, ListEnvelopeContactData)
    assert any(c.id == customer.id for c in page.data), "the new customer is listed"

    product = ProductInput.from_dict(
        {
            "name": f"Remera {run}",
            "options": ["Talle", "Color"],
            "variants": [
                {"sku": f"REM-{run}-S-R", "optionValues": {"Talle": "S", "Color": "Rojo"}, "price": 150000},
                {"sku": f"REM-{run}-M-R", "optionValues": {"Talle": "M", "Color": "Rojo"}, "price": 155000},
            ],
        }
    )
    made = expect(
        create_product.sync_detailed(client=api, body=product, idempotency_key=f"contract-{run}"),
        201,
        ProductCreatedEnvelope,
    )
    variants = made.data.variants
    assert len(variants) == 2, made.data

    variant = expect(get_product.sync_detailed(client=api, product_id=variants[1].id), 200, ProductEnvelope)
    assert variant.data.sku == f"REM-{run}-M-R" and variant.data.price == 155000, variant.data
    print(f"client: customer {customer.id} and product {made.data.id} round-tripped through the generated client")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
