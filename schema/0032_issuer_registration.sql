-- What a printed voucher shows of its issuer besides its name, CUIT and VAT condition: the commercial
-- address, the gross-income tax number (Ingresos Brutos) and the activity start date.
alter table organizations
    add column commercial_address  text,
    add column gross_income_number text,
    add column activity_start      date;
